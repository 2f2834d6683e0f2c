-- name: r_p04
-- category: config
-- kind: finding
-- severity: warn
-- description: R-P04 context parallelism that does not fit the sequence length: CP > 1 with short responses, or CP = 1 with long responses on one node
-- threshold: short_response = 8192  # at or below this, CP overhead outweighs its gain
-- threshold: long_response = 16384  # at or above this on one node, CP = 1 needs heavy recompute or OOMs
-- fix: short sequences: --context-parallel-size 1 and give the GPUs to TP or rollout; long sequences: --context-parallel-size 2 or 4
SELECT s.run_id, 'R-P04' AS subject, 'context_parallel_size' AS metric, s.cp1 AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       CASE WHEN s.cp1 > 1 THEN printf('--context-parallel-size %d with --rollout-max-response-len %d: sequences too short for CP', s.cp1, s.max_response_len)
            ELSE printf('--context-parallel-size 1 with --rollout-max-response-len %d on one node', s.max_response_len) END AS message,
       CASE WHEN s.cp1 > 1 THEN 'CP all-gathers the sequence dimension in every layer: a fixed overhead that short sequences do not repay.'
            ELSE 'without CP, long sequences need heavy recompute or offload, or OOM.' END
         || audit_baseline_note('CP', s.cp1, b.cp, b.name) AS impact,
       CASE WHEN s.cp1 > 1 THEN '--context-parallel-size 1' ELSE '--context-parallel-size 2' END AS fix,
       audit_evidence(s.script, f.file, f.line, '--context-parallel-size', f.value, f."array", CASE WHEN f.flag IS NULL THEN 'default' ELSE 'set' END,
                      CASE WHEN s.cp1 > 1 THEN 'Context parallelism on short sequences' ELSE 'No context parallelism for long sequences' END,
                      'a deliberate CP scaling experiment', n.note) AS evidence
FROM script_audit s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--context-parallel-size'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--context-parallel-size'
LEFT JOIN audit_baseline_match b ON b.run_id = s.run_id
WHERE s.max_response_len IS NOT NULL
  AND ((s.cp1 > 1 AND s.max_response_len <= $short_response)
       OR (s.cp1 = 1 AND s.max_response_len >= $long_response AND coalesce(s.nodes, 1) = 1))
