-- name: g_parallel_product
-- category: config
-- kind: finding
-- severity: critical
-- description: G-PAR the training GPUs are not a multiple of TP × PP × CP (Megatron's data-parallel size must be a whole number), or the stated DP does not multiply out
-- fix: choose TP, PP and CP whose product divides the training GPU count (DP = GPUs / (TP × PP × CP))
WITH g AS (
    SELECT s.*, coalesce(s.actor_gpus, s.gpus) AS world
    FROM script_audit s
)
SELECT g.run_id, 'G-PAR' AS subject, 'world_mod_model_parallel' AS metric, g.world % (g.tp1 * g.pp1 * g.cp1) AS value,
       printf('%d training GPUs are not divisible by TP%d × PP%d × CP%d = %d', g.world, g.tp1, g.pp1, g.cp1, g.tp1 * g.pp1 * g.cp1) AS message,
       'Megatron refuses to start: the data-parallel size world / (TP × PP × CP) must be a whole number.' AS impact,
       audit_evidence(g.script, f.file, f.line, '--tensor-model-parallel-size', f.value, f."array", 'derived',
                      'Parallel sizes do not divide the GPUs', 'never', NULL) AS evidence
FROM g
LEFT JOIN script_flags_effective f ON f.run_id = g.run_id AND f.flag = '--tensor-model-parallel-size'
WHERE g.world > 0 AND g.world % (g.tp1 * g.pp1 * g.cp1) <> 0
