-- name: g_tp_in_node
-- category: config
-- kind: finding
-- severity: warn
-- description: G-TP TP groups that straddle nodes (TP does not divide the GPUs per node) or do not divide the attention heads
-- fix: use a TP that divides both the GPUs per node and the number of attention heads
WITH c AS (
    SELECT s.*, printf('TP%d does not divide the %d GPUs of a node: some TP groups straddle two nodes', tp1, gpn) AS msg, 'warn' AS sev
    FROM script_audit s WHERE tp1 < gpn AND gpn % tp1 <> 0
    UNION ALL
    SELECT s.*, printf('%d attention heads are not divisible by TP%d', heads, tp1), 'critical'
    FROM script_audit s WHERE heads > 0 AND heads % tp1 <> 0
    -- KV heads are not checked: shipped Relax scripts run Qwen3.5 (2 KV
    -- heads) at TP4, so the bridge replicates them.
)
SELECT c.run_id, 'G-TP' AS subject, 'tensor_parallel_fit' AS metric, c.tp1 AS value, c.sev AS severity, c.msg AS message,
       CASE WHEN c.sev = 'critical' THEN 'Megatron refuses to start: attention heads are split across TP ranks.'
            ELSE 'TP collectives of the straddling groups run over InfiniBand.' END AS impact,
       audit_evidence(c.script, f.file, f.line, '--tensor-model-parallel-size', f.value, f."array", 'set',
                      'Tensor parallel size does not fit', 'never', NULL) AS evidence
FROM c
LEFT JOIN script_flags_effective f ON f.run_id = c.run_id AND f.flag = '--tensor-model-parallel-size'
