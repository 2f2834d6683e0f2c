-- name: r_p06
-- category: config
-- kind: finding
-- severity: critical
-- description: R-P06 tensor parallelism across nodes: TP larger than the GPUs of one node, or TP × CP spilling over a node so that per-layer collectives cross InfiniBand
-- fix: keep --tensor-model-parallel-size <= GPUs per node (8) and move the rest of the parallelism to PP, EP or DP
SELECT s.run_id, 'R-P06' AS subject, 'tp_over_node' AS metric, s.tp1 * s.cp1 AS value, s.gpn::DOUBLE AS threshold,
       CASE WHEN n.note IS NOT NULL THEN 'warn' WHEN s.tp1 <= s.gpn THEN 'warn' END AS severity,
       CASE WHEN s.tp1 > s.gpn THEN printf('--tensor-model-parallel-size %d exceeds the %d GPUs of a node', s.tp1, s.gpn)
            ELSE printf('TP%d × CP%d = %d exceeds the %d GPUs of a node: the context-parallel group spans nodes', s.tp1, s.cp1, s.tp1 * s.cp1, s.gpn) END AS message,
       'TP all-reduces in every layer; past the NVLink domain it runs over InfiniBand at an order of magnitude less bandwidth: MFU drops sharply.'
         || audit_baseline_note('TP', s.tp1, b.tp, b.name) AS impact,
       printf('--tensor-model-parallel-size %d', least(s.tp1, s.gpn)) AS fix,
       audit_evidence(s.script, f.file, f.line, '--tensor-model-parallel-size', f.value, f."array", 'set',
                      'Tensor parallelism across nodes', 'almost never; a deliberate cross-node TP study (then warn)', n.note) AS evidence
FROM script_audit s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--tensor-model-parallel-size'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--tensor-model-parallel-size'
LEFT JOIN audit_baseline_match b ON b.run_id = s.run_id
WHERE s.tp1 > s.gpn OR (s.tp1 * s.cp1 > s.gpn AND coalesce(s.nodes, 1) > 1)
