-- name: r_p03
-- category: config
-- kind: finding
-- severity: warn
-- description: R-P03 fully-async resources or staleness out of balance: max-staleness 0 with several iterations per update, many iterations per update on few rollout GPUs, or too few data storage units for the rollout engines
-- threshold: max_iters_per_rollout_share = 16  # iterations per train update divided by rollout:actor GPU ratio above this: rollout cannot keep up
-- threshold: engines_per_storage_unit = 4  # rollout engines per data storage unit above this: the transfer queue blocks
-- fix: keep --max-staleness >= 1; size actor:rollout GPUs so rollout step × iters-per-update ≈ actor step; raise --num-data-storage-units towards the number of rollout engines
WITH a AS (
    SELECT s.*,
           coalesce(s.rollout_gpus, s.gpus - s.actor_gpus) AS r_gpus,
           coalesce(s.rollout_gpus, s.gpus - s.actor_gpus) // coalesce(s.rollout_tp, 1) AS engines
    FROM script_audit s
    WHERE s.mode = 'fully-async'
), c AS (
    SELECT a.*, 'staleness' AS kind,
           printf('--max-staleness 0 with --num-iters-per-train-update %d: the pipeline falls back to lock-step', iters_per_update) AS msg,
           '--max-staleness' AS flag
    FROM a WHERE max_staleness = 0 AND iters_per_update > 1
    UNION ALL
    SELECT a.*, 'ratio',
           printf('--num-iters-per-train-update %d with %d rollout GPUs for %d actor GPUs: the rollout side is unlikely to keep up', iters_per_update, r_gpus, actor_gpus),
           '--num-iters-per-train-update'
    FROM a WHERE actor_gpus > 0 AND r_gpus > 0 AND iters_per_update / (r_gpus / actor_gpus) > $max_iters_per_rollout_share
    UNION ALL
    SELECT a.*, 'storage',
           printf('--num-data-storage-units %d for %d rollout engines: the transfer queue blocks', storage_units, engines),
           '--num-data-storage-units'
    FROM a WHERE storage_units > 0 AND engines / storage_units > $engines_per_storage_unit
)
SELECT c.run_id, 'R-P03' AS subject, 'async_' || c.kind AS metric, coalesce(c.iters_per_update, 0) AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       c.msg AS message,
       'fully-async gains come from overlapping actor and rollout; a bottleneck on either side or lock-step semantics drops throughput below sync mode.' AS impact,
       audit_evidence(c.script, f.file, f.line, c.flag, f.value, f."array", 'set',
                      'Fully-async resources / staleness out of balance',
                      'a deliberate staleness experiment (say so in a comment)', n.note) AS evidence
FROM c
LEFT JOIN script_flags_effective f ON f.run_id = c.run_id AND f.flag = c.flag
LEFT JOIN script_flag_notes n ON n.run_id = c.run_id AND n.flag = c.flag
