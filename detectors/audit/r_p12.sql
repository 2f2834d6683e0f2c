-- name: r_p12
-- category: config
-- kind: finding
-- severity: info
-- description: R-P12 colocate (sync) mode without SGLang CUDA graphs: --sglang-cuda-graph-bs unset or commented out
-- fix: --sglang-cuda-graph-bs 1 2 4 8 $(seq 16 8 256)
SELECT s.run_id, 'R-P12' AS subject, 'sglang_cuda_graph' AS metric, 0 AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       CASE WHEN c.flag IS NOT NULL THEN '--sglang-cuda-graph-bs is commented out in colocate mode'
            ELSE 'no --sglang-cuda-graph-bs in colocate mode' END AS message,
       'sync batches are stable, so CUDA graphs save 5-15% of per-step launch overhead in the rollout.' AS impact,
       audit_evidence(s.script, coalesce(c.file, a.file), coalesce(c.line, a.line), '--sglang-cuda-graph-bs', NULL, coalesce(c."array", a."array"),
                      'missing', 'SGLang CUDA graphs off in sync mode', 'highly dynamic rollout batches, or an SGLang version with CUDA graph bugs', n.note) AS evidence
FROM script_audit s
LEFT JOIN (SELECT * FROM script_flags WHERE flag = '--sglang-cuda-graph-bs' QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY seq DESC) = 1) c
  ON c.run_id = s.run_id
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--sglang-cuda-graph-bs'
LEFT JOIN script_arrays a ON a.run_id = s.run_id AND a."array" = 'SGLANG_ARGS'
WHERE s.mode = 'colocate' AND s.has_rollout AND NOT list_contains(s.flags, '--sglang-cuda-graph-bs')
