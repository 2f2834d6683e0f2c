-- name: r_p09
-- category: config
-- kind: finding
-- severity: warn
-- description: R-P09 training attention backend is not flash / fa3 (MLA models and non-CUDA accelerators excepted)
-- fix: add --attention-backend flash to MISC_ARGS
SELECT s.run_id, 'R-P09' AS subject, 'attention_backend' AS metric, 0 AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       CASE WHEN f.flag IS NULL THEN 'no --attention-backend: Megatron''s default backend is used'
            ELSE printf('--attention-backend %s', f.value) END AS message,
       'the default backend is slower than FlashAttention 2/3 and uses more memory.' AS impact,
       audit_evidence(s.script, coalesce(f.file, a.file), coalesce(f.line, a.line), '--attention-backend', f.value, coalesce(f."array", a."array"),
                      CASE WHEN f.flag IS NULL THEN 'missing' ELSE 'set' END,
                      'Attention backend is not FlashAttention', 'an MLA model, or one FlashAttention does not support', n.note) AS evidence
FROM script_audit s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--attention-backend'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--attention-backend'
LEFT JOIN script_arrays a ON a.run_id = s.run_id AND a."array" = 'MISC_ARGS'
WHERE s.framework IN ('relax', 'slime', 'megatron') AND NOT s.mla AND NOT s.non_cuda
  AND coalesce(s.attention_backend, '') NOT IN ('flash', 'fa3')
