-- name: host_exposed
-- category: cpu
-- kind: metric
-- description: per rank, the call stacks of Python functions and CPU operators whose own (self) time ran while the GPU had nothing to do (PerfTracker's Python functions section): calls, self time, the exposed part of it and its share of the GPU span; the ten most exposed per rank. A stack is shown by its last frames (root-most first, '…' where callers were cut); calls whose last frames agree are counted together. A slice's exposed share is the part of its interval during which the rank's GPU ran nothing (any stream), applied to its self time. Only threads that issue CUDA runtime calls count (all threads of a trace that has none): a background thread (tqdm's monitor, a logger) does not keep the GPU waiting
-- threshold: top_n = 10  # stacks listed per rank
-- threshold: frames = 4  # frames shown per stack, the innermost last
WITH RECURSIVE launchers AS (
    -- threads that issue GPU work (CUDA runtime calls): a thread that never
    -- does (tqdm's monitor, a logger) cannot keep the GPU waiting
    SELECT DISTINCT run_id, rank, tid FROM host_stack_time WHERE kind = 'runtime'
), launching AS (
    SELECT DISTINCT run_id, rank FROM launchers
), per AS (
    -- host_stack_time's own_*: the slices with self time and duration;
    -- exposed_self_ns, the part of their self time during which the GPU
    -- was idle (gpu_busy_dur, computed by the reader against all of the
    -- rank's GPU work). A rank whose trace shows no launching thread keeps
    -- all its threads (joins, not EXISTS: DuckDB's mark joins for those
    -- took twice as long). The shared view sums the host slices once, by
    -- thread and stack, for host_op_time too: the joins see a few thousand
    -- rows (syn8: 50 ms of CPU instead of 300 ms, two scans of the 800K
    -- host slices)
    SELECT h.run_id, h.rank, h.kind, h.stack_id, sum(h.own_calls) AS calls, sum(h.own_ns) AS self_ns,
           sum(h.exposed_self_ns) AS exposed_self_ns
    FROM host_stack_time h
    LEFT JOIN launchers l ON l.run_id = h.run_id AND l.rank = h.rank AND l.tid = h.tid
    LEFT JOIN launching x ON x.run_id = h.run_id AND x.rank = h.rank
    WHERE h.kind IN ('python', 'cpu_op', 'annotation') AND h.own_calls > 0 AND (l.tid IS NOT NULL OR x.rank IS NULL)
    GROUP BY h.run_id, h.rank, h.kind, h.stack_id
), used AS (
    SELECT DISTINCT run_id, rank, stack_id FROM per
), tree AS MATERIALIZED (
    -- the call trees read once: the walk below joins them at every step,
    -- and read from Parquet each time (syn8: 40 ms of CPU instead of 61,
    -- medians of 15)
    SELECT run_id, rank, stack_id, parent_id, name FROM stacks
), up AS (
    -- each used stack's last frames, walking up its callers
    SELECT s.run_id, s.rank, s.stack_id, s.parent_id AS next, 1 AS frames, s.name AS path
    FROM tree s JOIN used u ON u.run_id = s.run_id AND u.rank = s.rank AND u.stack_id = s.stack_id
    UNION ALL
    SELECT u.run_id, u.rank, u.stack_id, p.parent_id, u.frames + 1, p.name || ' > ' || u.path
    FROM up u JOIN tree p ON p.run_id = u.run_id AND p.rank = u.rank AND p.stack_id = u.next
    WHERE u.frames < $frames
), paths AS (
    SELECT run_id, rank, stack_id, arg_max(CASE WHEN next IS NULL THEN path ELSE '… > ' || path END, frames) AS path
    FROM up GROUP BY run_id, rank, stack_id
), tails AS (
    SELECT p.run_id, p.rank, p.kind || ' ' || coalesce(t.path, '?') AS subject,
           sum(p.calls) AS calls, sum(p.self_ns) AS self_ns, sum(p.exposed_self_ns) AS exposed_self_ns
    FROM per p
    LEFT JOIN paths t ON t.run_id = p.run_id AND t.rank = p.rank AND t.stack_id = p.stack_id
    GROUP BY ALL
)
SELECT p.run_id, p.rank, p.subject, p.calls, p.self_ns,
       round(p.exposed_self_ns) AS exposed_self_ns,
       pct(p.exposed_self_ns, sp.span_ns) AS exposed_pct
FROM tails p
JOIN gpu_span sp ON sp.run_id = p.run_id AND sp.rank = p.rank
QUALIFY row_number() OVER (PARTITION BY p.run_id, p.rank ORDER BY p.exposed_self_ns DESC, p.subject) <= $top_n
ORDER BY p.run_id, p.rank, exposed_self_ns DESC, p.subject
