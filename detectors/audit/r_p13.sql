-- name: r_p13
-- category: config
-- kind: finding
-- severity: warn
-- description: R-P13 --balance-data in pure fully-async mode (Relax refuses to start), or missing in colocate / hybrid mode with variable-length data and DP > 1
-- threshold: variable_response = 4096  # responses this long count as variable-length data even without dynamic batching
-- fix: fully-async: remove --balance-data or add --hybrid; colocate / hybrid: add --balance-data
SELECT s.run_id, 'R-P13' AS subject, 'balance_data' AS metric, s.dp1 AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' WHEN s.mode = 'fully-async' THEN 'critical' ELSE 'warn' END AS severity,
       CASE WHEN s.mode = 'fully-async' THEN '--balance-data in pure fully-async mode: Relax raises ValueError at start (--balance-data is not supported in pure fully-async mode)'
            ELSE printf('no --balance-data in %s mode with variable-length data and DP=%d', s.mode, s.dp1) END AS message,
       CASE WHEN s.mode = 'fully-async' THEN 'the job does not start: the actor consumes the rollout stream, which static balancing cannot reorder.'
            ELSE 'without token-balanced sampling stragglers hold up each step: 10-30% of step time with variable lengths and DP > 1.' END AS impact,
       CASE WHEN s.mode = 'fully-async' THEN 'remove --balance-data, or add --hybrid' ELSE 'add --balance-data' END AS fix,
       audit_evidence(s.script, coalesce(f.file, a.file), coalesce(f.line, a.line), '--balance-data', NULL, coalesce(f."array", a."array"),
                      CASE WHEN f.flag IS NULL THEN 'missing' ELSE 'set' END,
                      CASE WHEN s.mode = 'fully-async' THEN '--balance-data in pure fully-async mode' ELSE 'DP load balancing off for variable-length data' END,
                      'fixed-length data, DP=1, an algorithm that needs a prompt''s responses in one step, or a commented baseline experiment', n.note) AS evidence
FROM script_audit s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--balance-data'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--balance-data'
LEFT JOIN script_arrays a ON a.run_id = s.run_id AND a."array" = 'ROLLOUT_ARGS'
WHERE (s.mode = 'fully-async' AND f.flag IS NOT NULL)
   OR (s.mode IN ('colocate', 'hybrid') AND f.flag IS NULL AND s.dp1 > 1
       AND (list_contains(s.flags, '--use-dynamic-batch-size') OR s.max_response_len >= $variable_response))
