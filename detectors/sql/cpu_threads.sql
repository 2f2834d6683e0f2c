-- name: cpu_threads
-- category: cpu
-- kind: metric
-- order: 120
-- description: per rank, the host threads (by the name the trace gives them) with the most self time in the analysis window, the operator that took most of it, and how busy each was over the window
-- threshold: top_n = 5  # threads listed per rank
WITH t AS (
    SELECT run_id, rank, tid, sum(self_ns) AS self_ns, sum(calls) AS events, min(first_ts) AS first_ts, max(last_ts) AS last_ts,
           first(name ORDER BY self_ns DESC, name) AS top_op
    FROM host_op_time
    GROUP BY run_id, rank, tid
)
SELECT t.run_id, t.rank, coalesce(any_value(n.name), 'tid ' || t.tid) AS subject,
       t.top_op, t.events, t.self_ns, pct(t.self_ns, t.last_ts - t.first_ts) AS busy_pct
FROM t LEFT JOIN threads n ON n.run_id = t.run_id AND n.rank = t.rank AND n.tid = t.tid
GROUP BY t.run_id, t.rank, t.tid, t.top_op, t.events, t.self_ns, t.first_ts, t.last_ts
QUALIFY row_number() OVER (PARTITION BY t.run_id, t.rank ORDER BY t.self_ns DESC, t.tid) <= $top_n
ORDER BY t.run_id, t.rank, t.self_ns DESC, t.tid
