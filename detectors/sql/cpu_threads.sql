-- name: cpu_threads
-- category: cpu
-- kind: metric
-- description: per rank, the host threads with the most self time in the analysis window, the operator that took most of it, and how busy each was over the window
-- threshold: top_n = 5  # threads listed per rank
WITH t AS (
    SELECT run_id, rank, tid, sum(self_ns) AS self_ns, sum(calls) AS events, min(first_ts) AS first_ts, max(last_ts) AS last_ts,
           arg_max(name, self_ns) AS top_op
    FROM host_op_time
    GROUP BY run_id, rank, tid
)
SELECT run_id, rank, 'tid ' || tid AS subject, top_op, events, self_ns,
       pct(self_ns, last_ts - first_ts) AS busy_pct
FROM t
QUALIFY row_number() OVER (PARTITION BY run_id, rank ORDER BY self_ns DESC, tid) <= $top_n
ORDER BY run_id, rank, self_ns DESC, tid
