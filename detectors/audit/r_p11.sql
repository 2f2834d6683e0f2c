-- name: r_p11
-- category: config
-- kind: finding
-- severity: warn
-- description: R-P11 static batches: --use-dynamic-batch-size missing, so variable-length samples are padded to the longest
-- fix: add --use-dynamic-batch-size with a suitable --max-tokens-per-gpu (see R-M03)
SELECT s.run_id, 'R-P11' AS subject, 'dynamic_batch_size' AS metric, 0 AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       'no --use-dynamic-batch-size: micro-batches are padded to the longest sample' AS message,
       'padding variable-length sequences to the maximum wastes 30% or more of the compute.' AS impact,
       printf('--use-dynamic-batch-size --max-tokens-per-gpu %d', coalesce((s.max_response_len * 2.5 * (s.tp1 / 2.0) / s.cp1)::BIGINT, 10240)) AS fix,
       audit_evidence(s.script, a.file, a.line, '--use-dynamic-batch-size', NULL, a."array", 'missing',
                      'Static batches on variable-length data', 'fixed-length data (multiple-choice eval), or debugging batching', n.note) AS evidence
FROM script_audit s
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--use-dynamic-batch-size'
LEFT JOIN script_arrays a ON a.run_id = s.run_id AND a."array" = 'PERF_ARGS'
WHERE s.framework IN ('relax', 'slime') AND NOT list_contains(s.flags, '--use-dynamic-batch-size')
