-- name: g_ep_divides
-- category: config
-- kind: finding
-- severity: critical
-- description: G-EP expert parallelism that does not divide: experts not divisible by EP, or ETP × EP × PP not dividing the training GPUs
-- fix: pick EP dividing the expert count and ETP × EP × PP dividing the training GPUs
WITH g AS (
    SELECT s.*, coalesce(s.train_gpus, s.actor_gpus, s.gpus) AS world FROM script_audit s WHERE s.moe OR s.ep1 > 1
), c AS (
    SELECT g.*, printf('%d experts are not divisible by EP%d', experts, ep1) AS msg, experts % ep1 AS v
    FROM g WHERE experts > 0 AND experts % ep1 <> 0
    UNION ALL
    SELECT g.*, printf('%d training GPUs are not divisible by ETP%d × EP%d × PP%d = %d', world, etp1, ep1, pp1, etp1 * ep1 * pp1), world % (etp1 * ep1 * pp1)
    FROM g WHERE world > 0 AND world % (etp1 * ep1 * pp1) <> 0
)
SELECT c.run_id, 'G-EP' AS subject, 'expert_parallel_remainder' AS metric, c.v AS value, c.msg AS message,
       'Megatron refuses to start: expert groups must tile the experts and the GPUs.' AS impact,
       audit_evidence(c.script, f.file, f.line, '--expert-model-parallel-size', f.value, f."array", 'set',
                      'Expert parallel sizes do not divide', 'never', NULL) AS evidence
FROM c
LEFT JOIN script_flags_effective f ON f.run_id = c.run_id AND f.flag = '--expert-model-parallel-size'
