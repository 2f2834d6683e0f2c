-- name: r_p08
-- category: config
-- kind: finding
-- severity: info
-- description: R-P08 MoE model without the DeepEP dispatcher (--moe-token-dispatcher-type flex + --moe-flex-dispatcher-backend deepep)
-- fix: add --moe-token-dispatcher-type flex --moe-flex-dispatcher-backend deepep
SELECT s.run_id, 'R-P08' AS subject, 'moe_dispatcher' AS metric, 0 AS value,
    -- DeepEP is CUDA only: NPU / KLX / XPU scripts are skipped (the rule's
    -- "version does not support DeepEP").
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       printf('MoE token dispatcher is %s%s, not flex + deepep', coalesce(s.dispatcher, 'the default (alltoall)'),
              CASE WHEN s.dispatcher_backend IS NOT NULL THEN ' / ' || s.dispatcher_backend ELSE '' END) AS message,
       'DeepEP is markedly faster than the alltoall dispatcher for EP communication.' AS impact,
       audit_evidence(s.script, coalesce(f.file, a.file), coalesce(f.line, a.line), '--moe-token-dispatcher-type', f.value, coalesce(f."array", a."array"),
                      CASE WHEN f.flag IS NULL THEN 'missing' ELSE 'set' END,
                      'MoE without the DeepEP dispatcher', 'the model or Megatron version does not support DeepEP', n.note) AS evidence
FROM script_audit s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--moe-token-dispatcher-type'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag IN ('--moe-token-dispatcher-type', '--moe-flex-dispatcher-backend')
LEFT JOIN script_arrays a ON a.run_id = s.run_id AND a."array" = 'PERF_ARGS'
WHERE s.moe AND NOT s.non_cuda
  AND NOT (coalesce(s.dispatcher, '') = 'flex' AND coalesce(s.dispatcher_backend, '') = 'deepep')
