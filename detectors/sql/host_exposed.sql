-- name: host_exposed
-- category: cpu
-- kind: metric
-- description: per rank, the Python functions and CPU operators whose own (self) time ran while the GPU had nothing to do (PerfTracker's Python functions section): calls, self time, the exposed part of it and its share of the GPU span; the ten most exposed per rank. A slice's exposed share is the part of its interval outside the GPU's busy islands, applied to its self time
-- threshold: top_n = 10  # operators listed per rank
WITH isl AS (
    -- the busy islands with the busy time before each, so that the busy
    -- time up to any instant t is one ASOF lookup: cum_before + the part
    -- of the island that started last before t
    SELECT run_id, rank, start_ns, end_ns,
           sum(end_ns - start_ns) OVER (PARTITION BY run_id, rank ORDER BY start_ns ROWS UNBOUNDED PRECEDING) - (end_ns - start_ns) AS cum_before
    FROM gpu_busy
), h AS (
    SELECT run_id, rank, kind, name, ts, ts + dur AS end_ts, dur, self_dur
    FROM host_window
    WHERE kind IN ('python', 'cpu_op', 'annotation') AND self_dur > 0 AND dur > 0
), b_start AS (
    SELECT h.*, coalesce(i.cum_before + least(h.ts, i.end_ns) - i.start_ns, 0) AS busy_before_start
    FROM h ASOF LEFT JOIN isl i ON i.run_id = h.run_id AND i.rank = h.rank AND h.ts >= i.start_ns
), b AS (
    SELECT s.*, coalesce(i.cum_before + least(s.end_ts, i.end_ns) - i.start_ns, 0) AS busy_before_end
    FROM b_start s ASOF LEFT JOIN isl i ON i.run_id = s.run_id AND i.rank = s.rank AND s.end_ts >= i.start_ns
), per AS (
    SELECT run_id, rank, kind, name, count(*) AS calls, sum(self_dur) AS self_ns,
           sum(self_dur * (1.0 - (busy_before_end - busy_before_start) / dur)) AS exposed_self_ns
    FROM b
    GROUP BY run_id, rank, kind, name
)
SELECT p.run_id, p.rank, p.kind || ' ' || p.name AS subject, p.calls, p.self_ns,
       round(p.exposed_self_ns) AS exposed_self_ns,
       pct(p.exposed_self_ns, sp.span_ns) AS exposed_pct
FROM per p
JOIN gpu_span sp ON sp.run_id = p.run_id AND sp.rank = p.rank
QUALIFY row_number() OVER (PARTITION BY p.run_id, p.rank ORDER BY p.exposed_self_ns DESC, subject) <= $top_n
ORDER BY p.run_id, p.rank, exposed_self_ns DESC, subject
