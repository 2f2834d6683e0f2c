-- name: cpu_top_ops
-- category: cpu
-- kind: metric
-- order: 110
-- description: per run, the host operators (ATen ops, Python functions, runtime calls, annotations) with the most self time (their own time, without what they call) in the analysis window, over all ranks, with total time, calls and the share of all host self time
-- threshold: top_n = 15  # operators listed
WITH h AS (
    SELECT run_id, kind, name, sum(calls) AS calls, sum(total_ns) AS total_ns, sum(self_ns) AS self_ns
    FROM host_op_time
    GROUP BY run_id, kind, name
)
SELECT run_id, kind, name, calls, total_ns, self_ns, self_ns / calls AS mean_self_ns,
       pct(self_ns, sum(self_ns) OVER (PARTITION BY run_id)) AS self_pct
FROM h
QUALIFY row_number() OVER (PARTITION BY run_id ORDER BY self_ns DESC, name) <= $top_n
ORDER BY run_id, self_ns DESC, name
