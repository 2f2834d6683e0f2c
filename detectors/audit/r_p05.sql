-- name: r_p05
-- category: config
-- kind: finding
-- severity: warn
-- description: R-P05 MoE model with --expert-model-parallel-size 1: every expert is replicated on every GPU (critical with many experts)
-- threshold: critical_experts = 64  # with this many experts or more EP = 1 is critical
-- fix: set --expert-model-parallel-size to experts / N (4 or 8 usually) with --expert-tensor-parallel-size 1
WITH s AS (
    SELECT *, least(8, greatest(coalesce(train_gpus, gpus, 8) // pp1, 1), coalesce(experts, 8)) AS ep_fix
    FROM script_audit
)
SELECT s.run_id, 'R-P05' AS subject, 'expert_parallel_size' AS metric, s.ep1 AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' WHEN coalesce(s.experts, 0) >= $critical_experts THEN 'critical' END AS severity,
       printf('%s is MoE (%s experts) but --expert-model-parallel-size is 1: each GPU holds all experts', coalesce(s.model, 'the model'), coalesce(s.experts::VARCHAR, '?')) AS message,
       printf('expert weights, gradients and optimizer states are replicated %d× instead of sharded; EP is the main MoE lever for memory and communication.', greatest(coalesce(s.train_gpus, s.gpus, 1) // (s.tp1 * s.pp1 * s.cp1), 1))
         || audit_baseline_note('EP', s.ep1, b.ep, b.name) AS impact,
       printf('--expert-model-parallel-size %d --expert-tensor-parallel-size 1', s.ep_fix) AS fix,
       audit_evidence(s.script, f.file, f.line, '--expert-model-parallel-size', f.value, f."array", CASE WHEN f.flag IS NULL THEN 'default' ELSE 'set' END,
                      'MoE without expert parallelism', 'a single-node MoE experiment, or a single expert', n.note) AS evidence
FROM s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--expert-model-parallel-size'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--expert-model-parallel-size'
LEFT JOIN audit_baseline_match b ON b.run_id = s.run_id
WHERE s.moe AND s.ep1 = 1 AND coalesce(s.experts, 2) > 1
