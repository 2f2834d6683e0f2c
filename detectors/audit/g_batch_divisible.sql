-- name: g_batch_divisible
-- category: config
-- kind: finding
-- severity: critical
-- description: G-BATCH global batch not divisible by micro-batch × DP (with dynamic batching, by DP)
-- fix: make --global-batch-size a multiple of --micro-batch-size × DP
WITH s AS (
    SELECT *, CASE WHEN list_contains(flags, '--use-dynamic-batch-size') THEN 1 ELSE coalesce(micro_batch, 1) END AS mb
    FROM script_audit
)
SELECT s.run_id, 'G-BATCH' AS subject, 'global_batch_remainder' AS metric, s.global_batch % (s.mb * s.dp) AS value,
       printf('--global-batch-size %d is not divisible by micro-batch %d × DP%d = %d', s.global_batch, s.mb, s.dp, s.mb * s.dp) AS message,
       'Megatron refuses to start or drops samples: each DP rank needs a whole number of micro-batches per step.' AS impact,
       audit_evidence(s.script, f.file, f.line, '--global-batch-size', f.value, f."array", 'set',
                      'Global batch does not divide over DP', 'never', NULL) AS evidence
FROM s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--global-batch-size'
WHERE s.global_batch > 0 AND s.dp > 0 AND s.global_batch % (s.mb * s.dp) <> 0
