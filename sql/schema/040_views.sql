-- Views shared by detectors.

-- GPU activity inside each rank's analysis window, with HTA's kernel
-- classes: COMM (NCCL/RCCL kernels), MEM (memcpy, memset), COMP (the rest).
-- GPU work belongs to the step of the runtime call that launched it; with
-- a step window set, work without a known launch is outside the window.
CREATE OR REPLACE VIEW gpu_window AS
SELECT s.run_id, s.rank, s.host, s.step, s.kind, s.name, s.device, s.stream,
       s.ts, s.dur, s.ts + s.dur AS end_ts, s.correlation, s.external_id, s.launch_ts,
       s.bytes, s.copy_kind, s.host_mem,
       s.coll_name, s.coll_in_elems, s.coll_out_elems, s.coll_dtype, s.coll_group_size,
       s.pg_name, s.pg_desc, s.pg_ranks, s.coll_algo, s.coll_proto,
       CASE WHEN s.kind = 'comm' THEN 'COMM'
            WHEN s.kind IN ('memcpy', 'memset') THEN 'MEM'
            ELSE 'COMP' END AS class,
       w.rk
FROM slices_detail s
JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
WHERE s.kind IN ('kernel', 'comm', 'memcpy', 'memset')
  AND (w.step_lo IS NULL OR s.step >= w.step_lo)
  AND (w.step_hi IS NULL OR s.step <= w.step_hi)
  AND (s.step IS NOT NULL OR (w.step_lo IS NULL AND w.step_hi IS NULL));

-- Host-side slices inside the analysis window.
CREATE OR REPLACE VIEW host_window AS
SELECT s.*, w.rk
FROM slices s
JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
WHERE s.kind NOT IN ('kernel', 'comm', 'memcpy', 'memset', 'gpu_annotation', 'sync')
  AND (w.step_lo IS NULL OR s.step >= w.step_lo)
  AND (w.step_hi IS NULL OR s.step <= w.step_hi)
  AND (s.step IS NOT NULL OR (w.step_lo IS NULL AND w.step_hi IS NULL));

-- Per rank: the span of GPU activity in the window (HTA's kernel_time).
CREATE OR REPLACE VIEW gpu_span AS
SELECT run_id, rank, min(ts) AS start_ns, max(end_ts) AS end_ns, max(end_ts) - min(ts) AS span_ns
FROM gpu_window
GROUP BY run_id, rank;

-- One row per rank taking part in a collective instance. Instances are
-- matched across ranks by communicator (process-group ranks, else its name,
-- else the stream), step and order within the step: NCCL runs the
-- collectives of one communicator in the same order on every member.
-- Rank clocks are aligned on collective ends (the ends of one collective
-- agree across ranks; the starts differ by the time ranks waited), so
-- arrival times compare across hosts whose clocks are skewed.
--
-- Each rank's time in the collective splits into wait_ns, from its own
-- arrival to the last member's (it could not start moving data before),
-- and transfer_ns, the rest. The last to arrive (is_last) held the
-- instance up by block_ns: its arrival less the one before it, at most
-- that one's time in the collective (a peer cannot wait longer than its
-- kernel ran; aligned clocks that say otherwise are off). Summed over
-- a step, that is the step time the whole job would save had it not been
-- late: the critical path runs through the last arrival of every
-- collective, whatever the ranks' step times say (synchronous collectives
-- even those out).
-- It carries what coll_wait and slow_link read of each collective (group
-- size, pg_desc, grp: the group as comm_groups names it, bytes: the larger
-- of its input and output) so that they need not join gpu_window again.
CREATE OR REPLACE VIEW collective_instances AS
WITH c AS (
    SELECT run_id, rank, host, step, stream, name, coll_name, ts, end_ts, coll_in_elems, coll_dtype,
           coll_group_size, pg_desc,
           coalesce(nullif(pg_desc, 'undefined'), 'pg ' || pg_name || coalesce(' ' || pg_ranks, ''), 'stream ' || stream) AS grp,
           greatest(coalesce(coll_in_elems, 0), coalesce(coll_out_elems, 0)) * dtype_bytes(coll_dtype) AS bytes,
           coalesce(pg_ranks, pg_name, 'stream ' || stream) AS comm,
           row_number() OVER (PARTITION BY run_id, rank, coalesce(pg_ranks, pg_name, 'stream ' || stream), coalesce(step, -1)
                              ORDER BY ts, end_ts) AS seq
    FROM gpu_window
    -- kind says it too, and reaches the scan of slices_detail (class,
    -- computed, does not)
    WHERE class = 'COMM' AND kind = 'comm'
), inst AS (
    SELECT run_id, comm, coalesce(step, -1) AS step_key, seq, quantile_disc(end_ts, 0.5) AS med_end, count(*) AS members
    FROM c
    GROUP BY run_id, comm, coalesce(step, -1), seq
    HAVING count(DISTINCT rank) >= 2 AND count(DISTINCT coalesce(coll_name, name)) = 1
), off AS (
    SELECT c.run_id, c.rank, quantile_disc(c.end_ts - i.med_end, 0.5) AS clock_offset_ns
    FROM c JOIN inst i ON i.run_id = c.run_id AND i.comm = c.comm AND i.step_key = coalesce(c.step, -1) AND i.seq = c.seq
    GROUP BY c.run_id, c.rank
), a AS (
    SELECT c.run_id, c.comm, c.step, c.seq, c.rank, c.host, c.stream, c.name, c.coll_name, i.members,
           c.ts, c.end_ts, o.clock_offset_ns, c.coll_group_size, c.pg_desc, c.grp, c.bytes,
           c.ts - o.clock_offset_ns AS arrival_ns,
           c.end_ts - o.clock_offset_ns AS aligned_end_ns
    FROM c
    JOIN inst i ON i.run_id = c.run_id AND i.comm = c.comm AND i.step_key = coalesce(c.step, -1) AND i.seq = c.seq
    JOIN off o ON o.run_id = c.run_id AND o.rank = c.rank
), top2 AS (
    -- per instance, the last two arrivals (latest first, ties to the
    -- lower rank): a group by and a join, cheaper than sorting every
    -- column of every row in window functions (syn8: 98 -> 85 ms of CPU)
    SELECT run_id, comm, step, seq, max(arrival_ns) AS last_arrival_ns,
           max_by({'rank': rank, 'arrival_ns': arrival_ns, 'dur': end_ts - ts}, (arrival_ns, -rank), 2) AS l2
    FROM a
    GROUP BY run_id, comm, step, seq
), r AS (
    SELECT a.*, t.last_arrival_ns,
           CASE WHEN a.rank = t.l2[1].rank THEN 1 ELSE 2 END AS arrival_order,
           t.l2[2].arrival_ns AS second_arrival_ns,
           t.l2[2].dur AS second_dur_ns
    FROM a JOIN top2 t ON t.run_id = a.run_id AND t.comm = a.comm AND t.step IS NOT DISTINCT FROM a.step AND t.seq = a.seq
)
SELECT run_id, comm, step, seq, rank, host, stream, name, coll_name, members, ts, end_ts, clock_offset_ns,
       arrival_ns, aligned_end_ns, last_arrival_ns,
       least(end_ts - ts, greatest(0, last_arrival_ns - arrival_ns)) AS wait_ns,
       (end_ts - ts) - least(end_ts - ts, greatest(0, last_arrival_ns - arrival_ns)) AS transfer_ns,
       arrival_order = 1 AS is_last,
       CASE WHEN arrival_order = 1
            THEN least(greatest(0, arrival_ns - coalesce(second_arrival_ns, arrival_ns)), coalesce(second_dur_ns, 0))
            ELSE 0 END AS block_ns,
       coll_group_size, pg_desc, grp, bytes
FROM r;

CREATE OR REPLACE VIEW collective_waits AS
SELECT run_id, comm, step, seq, any_value(coalesce(coll_name, name)) AS collective, count(*) AS members,
       max(arrival_ns) - min(arrival_ns) AS spread_ns,
       arg_max(rank, (arrival_ns, -rank)) AS last_rank,
       sum(wait_ns) AS wait_caused_ns,
       max(wait_ns) AS max_wait_ns,
       max(block_ns) AS block_ns
FROM collective_instances
GROUP BY run_id, comm, step, seq;

-- Per rank, process group and collective (comm_groups' grp and coll): the
-- transfer time of its collectives (each from its last member's arrival)
-- that no compute kernel on the same GPU overlapped, the union of the
-- transfers less the part under the union of compute. Only the compute
-- within the span of the key's collectives is swept with them: a rank
-- with a few short collectives of several groups sweeps a few kernels per
-- group, not all of them. A key whose transfers last no time has no row.
-- A detector pass computes it in Go (timelines_comm.go).
CREATE OR REPLACE VIEW comm_exposed AS
WITH ci AS (
    SELECT run_id, rank, stream, ts, wait_ns FROM collective_instances WHERE wait_ns > 0
), c AS (
    SELECT g.run_id, g.rank, g.ts + coalesce(ci.wait_ns, 0) AS ts, g.end_ts,
           coalesce(nullif(pg_desc, 'undefined'), 'pg ' || pg_name || coalesce(' ' || pg_ranks, ''), 'stream ' || g.stream) AS grp,
           coalesce(coll_name, name) || coalesce(' ' || coll_algo || coalesce('/' || coll_proto, ''), '') AS coll
    FROM gpu_window g
    LEFT JOIN ci ON ci.run_id = g.run_id AND ci.rank = g.rank AND ci.stream IS NOT DISTINCT FROM g.stream AND ci.ts = g.ts
    WHERE g.class = 'COMM' AND g.kind = 'comm' -- kind reaches the scan
), keys AS (
    -- one integer per (rank, group, collective): the sweep partitions on
    -- it; lo and hi span the key's collectives
    SELECT run_id, rank, grp, coll, lo, hi, row_number() OVER () AS kid
    FROM (SELECT run_id, rank, grp, coll, min(ts) AS lo, max(end_ts) AS hi FROM c GROUP BY ALL)
), a AS (
    SELECT k.kid AS g, c.ts AS s, c.end_ts AS e
    FROM c JOIN keys k ON k.run_id = c.run_id AND k.rank = c.rank AND k.grp = c.grp AND k.coll = c.coll
), b AS (
    SELECT k.kid AS g, w.ts AS s, w.end_ts AS e
    FROM gpu_window w JOIN keys k ON k.run_id = w.run_id AND k.rank = w.rank AND w.end_ts > k.lo AND w.ts < k.hi
    WHERE w.class = 'COMP' AND w.kind = 'kernel'
)
SELECT k.run_id, k.rank, k.grp, k.coll, e.exposed_ns FROM exposed_time(a, b) e JOIN keys k ON k.kid = e.g;

-- Per rank: how long each combination of GPU work classes ran, from one
-- sweep over every activity in the window. state counts active COMP
-- activities in its low 20 bits, COMM (collective transfer) in the next 20,
-- MEM in the 10 above and WAIT (collectives waiting for a late member)
-- above that; use the comp_active / comm_active / mem_active / wait_active
-- macros to read it.
CREATE OR REPLACE VIEW gpu_class_time AS
WITH ci AS (
    SELECT run_id, rank, stream, ts, wait_ns FROM collective_instances WHERE wait_ns > 0
), g AS (
    SELECT g.rk, g.ts, g.end_ts, g.class, ci.wait_ns
    FROM gpu_window g
    LEFT JOIN ci ON g.class = 'COMM' AND ci.run_id = g.run_id AND ci.rank = g.rank
                AND ci.stream IS NOT DISTINCT FROM g.stream AND ci.ts = g.ts
), cls AS (
    -- a collective's wait for its last member is WAIT (2^50), the rest of
    -- it COMM: exposed communication is transfer, not waiting
    SELECT rk AS g, ts + coalesce(wait_ns, 0) AS s, end_ts AS e,
           CASE class WHEN 'COMP' THEN 1 WHEN 'COMM' THEN 1048576 ELSE 1099511627776 END AS w
    FROM g
    UNION ALL
    SELECT rk, ts, ts + wait_ns, 1125899906842624 FROM g WHERE wait_ns > 0
)
SELECT w.run_id, w.rank, c.state, c.ns FROM active_time(cls) c JOIN analysis_window w ON w.rk = c.g;

-- Host time per rank, thread, operator and call stack in the analysis
-- window, every host slice in one group: of the slices with a self time
-- (self_dur not NULL) calls, total and self time, the longest, first start
-- and last end (host_op_time's measures); of those with some self time and
-- duration (self_dur > 0, dur > 0) own_calls, own_ns (their self time) and
-- exposed_self_ns, the part of their self time during which the rank's GPU
-- ran nothing (host_exposed's); of all its slices, whatever their self
-- time, slices, slices_ns (their duration) and idle_ns (the part of it
-- during which the GPU ran nothing, of those whose GPU busy time is
-- known: runtime_api's per-call sums); a group of slices without self
-- time has calls 0. One scan of the host slices for host_op_time,
-- host_exposed and its launching threads (syn8: 1,368 rows from 650K
-- slices; the pass computes it once, before host_op_time).
CREATE OR REPLACE VIEW host_stack_time AS
SELECT run_id, rank, tid, kind, name, stack_id,
       count(self_dur) AS calls, sum(d) AS total_ns, sum(self_dur) AS self_ns, max(d) AS longest_ns,
       min(s) AS first_ts, max(s + d) AS last_ts,
       count(own) AS own_calls, sum(own) AS own_ns,
       sum(own * (1.0 - gpu_busy_dur / dur)) AS exposed_self_ns,
       count(*) AS slices, sum(dur) AS slices_ns, sum(dur - gpu_busy_dur) AS idle_ns
FROM (
    SELECT run_id, rank, tid, kind, name, stack_id, self_dur, dur, gpu_busy_dur,
           CASE WHEN self_dur IS NOT NULL THEN dur END AS d,
           CASE WHEN self_dur IS NOT NULL THEN ts END AS s,
           CASE WHEN self_dur > 0 AND dur > 0 THEN self_dur END AS own
    FROM host_window
)
GROUP BY run_id, rank, tid, kind, name, stack_id;

-- Host time per rank, thread and operator in the analysis window: calls,
-- total and self time, first start and last end (of the slices with a self
-- time; host_stack_time's groups, summed over their call stacks).
CREATE OR REPLACE VIEW host_op_time AS
SELECT run_id, rank, tid, kind, name, sum(calls)::BIGINT AS calls, sum(total_ns) AS total_ns, sum(self_ns) AS self_ns,
       max(longest_ns) AS longest_ns, min(first_ts) AS first_ts, max(last_ts) AS last_ts
FROM host_stack_time
WHERE calls > 0
GROUP BY run_id, rank, tid, kind, name;

-- Per rank, device and ProfilerStep: peak tensor memory and peak reserve
-- from the trace's [memory] events.
CREATE OR REPLACE VIEW step_memory_peaks AS
WITH c AS (
    SELECT c.run_id, c.rank, c.device, s.step, c.metric, c.value
    FROM counters c
    JOIN steps s ON s.run_id = c.run_id AND s.rank = c.rank AND c.ts >= s.start_ns AND c.ts < s.end_ns
    WHERE c.metric IN ('memory_allocated_bytes', 'memory_reserved_bytes') AND c.device IS NOT NULL
)
SELECT run_id, rank, device, step,
       max(value) FILTER (WHERE metric = 'memory_allocated_bytes') AS peak_allocated_bytes,
       max(value) FILTER (WHERE metric = 'memory_reserved_bytes') AS peak_reserved_bytes,
       count(*) FILTER (WHERE metric = 'memory_allocated_bytes') AS samples
FROM c
GROUP BY run_id, rank, device, step;

-- Per rank: the islands of GPU activity (the union of all streams' work)
-- in the analysis window.
CREATE OR REPLACE VIEW gpu_busy AS
WITH g AS (
    SELECT rk AS g, ts AS s, end_ts AS e FROM gpu_window
)
SELECT w.run_id, w.rank, u.s AS start_ns, u.e AS end_ns, w.rk
FROM interval_union(g) u JOIN analysis_window w ON w.rk = u.g;

-- Per rank and memory operation (mem_ops's subjects: Memset and
-- 'Memcpy ' || the copy kind, Memcpy other where it has none), the time it
-- ran in the window while no compute kernel did, from one sweep per rank
-- and operation over the rank's compute and that operation's work.
CREATE OR REPLACE VIEW gpu_mem_exposed AS
WITH ops AS (
    SELECT rk, ts, end_ts,
           CASE WHEN kind = 'memset' THEN 'Memset' ELSE 'Memcpy ' || coalesce(copy_kind, 'other') END AS op
    FROM gpu_window
    WHERE class = 'MEM'
), kinds AS (
    SELECT DISTINCT rk, op FROM ops
), sweep_in AS (
    -- one sweep per rank and operation (every copy kind its own: HtoH is
    -- not "other"): the rank's compute (count in the low 32 bits) against
    -- that operation's rows (the high bits)
    SELECT {'rk': k.rk, 'op': k.op} AS g, c.ts AS s, c.end_ts AS e, 1::BIGINT AS w
    FROM gpu_window c JOIN kinds k ON k.rk = c.rk
    WHERE c.class = 'COMP'
    UNION ALL
    SELECT {'rk': rk, 'op': op}, ts, end_ts, 4294967296::BIGINT FROM ops
), states AS (
    SELECT w.run_id, w.rank, a.g.op AS op, a.state, a.ns FROM active_time(sweep_in) a JOIN analysis_window w ON w.rk = a.g.rk
)
SELECT run_id, rank, op, sum(ns) AS exposed_ns
FROM states
WHERE state & 4294967295 = 0   -- no compute running
  AND state >> 32 > 0          -- this operation running
GROUP BY run_id, rank, op;

-- For every collective instance someone held up (block_ns > 0), each
-- member's stretch before it: from the end of its previous collective
-- (across steps: a step's tail, optimizer and all, leads into the next
-- step's first collective; else the step's start) to its own arrival, on
-- its own clock,
-- and what its GPU and host did in it. The late member's stretch against
-- the median of the others' tells why it came late: its kernels took longer
-- (compute_ns), its copies did (mem_ns), or its GPU sat idle (idle_ns)
-- while the host did something the others did not (the host operator with
-- the most exposed self time beyond the peers', host_excess_*), called
-- synchronizing APIs (sync_calls), or launched many more small kernels
-- (kernels). The detectors' cause graph reads this view.
CREATE OR REPLACE VIEW late_arrivals AS
WITH seq AS (
    SELECT ci.*,
           coalesce(lag(ci.end_ts) OVER (PARTITION BY ci.run_id, ci.rank ORDER BY ci.ts, ci.end_ts), st.start_ns, ci.ts) AS prev_end
    FROM collective_instances ci
    LEFT JOIN steps st ON st.run_id = ci.run_id AND st.rank = ci.rank AND st.step = ci.step
), held AS (
    SELECT run_id, comm, step, seq, rank AS late_rank, block_ns FROM collective_instances WHERE is_last AND block_ns > 0
), seg AS (
    SELECT s.run_id, s.comm, s.step, s.seq, s.rank, s.host, s.coll_name, s.name, h.late_rank, h.block_ns,
           least(s.prev_end, s.ts) AS s, s.ts AS e, w.rk
    FROM seq s
    JOIN held h ON h.run_id = s.run_id AND h.comm = s.comm AND h.step IS NOT DISTINCT FROM s.step AND h.seq = s.seq
    JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
), gpu AS (
    SELECT g.run_id, g.comm, g.step, g.seq, g.rank,
           coalesce(sum(least(k.end_ts, g.e) - greatest(k.ts, g.s)) FILTER (WHERE k.class = 'COMP'), 0) AS compute_ns,
           coalesce(sum(least(k.end_ts, g.e) - greatest(k.ts, g.s)) FILTER (WHERE k.class = 'MEM'), 0) AS mem_ns,
           count(*) FILTER (WHERE k.class = 'COMP') AS kernels,
           coalesce(sum(k.end_ts - k.ts) FILTER (WHERE k.class = 'MEM' AND k.host_mem = 'pageable'), 0) AS pageable_ns
    FROM seg g JOIN gpu_window k ON k.rk = g.rk AND k.end_ts > g.s AND k.ts < g.e AND k.class <> 'COMM'
    GROUP BY ALL
), busy AS (
    SELECT g.run_id, g.comm, g.step, g.seq, g.rank, sum(least(b.end_ns, g.e) - greatest(b.start_ns, g.s)) AS busy_ns
    FROM seg g JOIN gpu_busy b ON b.rk = g.rk AND b.end_ns > g.s AND b.start_ns < g.e
    GROUP BY ALL
), host AS (
    -- exposed self time per host operator overlapping each stretch (its
    -- share inside it), and the synchronizing calls that returned in it:
    -- the host runs ahead of the GPU, so a call that drains the GPU
    -- starts before the stretch it holds up, but ends in it
    SELECT g.run_id, g.comm, g.step, g.seq, g.rank, h.name,
           sum(h.self_dur * (1.0 - coalesce(h.gpu_busy_dur, 0) / h.dur)
               * (least(h.ts + h.dur, g.e) - greatest(h.ts, g.s)) / h.dur) AS exposed_ns,
           count(*) FILTER (WHERE h.kind IN ('runtime', 'driver') AND h.ts + h.dur >= g.s AND h.ts + h.dur < g.e
                            AND (h.name LIKE '%Synchronize%' OR h.name IN ('cudaMemcpy', 'hipMemcpy', 'cudaMemset', 'hipMemset'))) AS sync_calls,
           arg_max(h.stack_id, h.dur) AS stack_id
    FROM seg g JOIN host_window h ON h.rk = g.rk AND h.ts < g.e AND h.ts + h.dur > g.s
    WHERE h.dur > 0 AND h.self_dur > 0 AND h.name NOT LIKE 'ProfilerStep#%' -- the step itself names no cause
    GROUP BY ALL
), per AS (
    SELECT g.*, g.e - g.s AS seg_ns,
           coalesce(u.compute_ns, 0) AS compute_ns, coalesce(u.mem_ns, 0) AS mem_ns, coalesce(u.kernels, 0) AS kernels,
           coalesce(u.pageable_ns, 0) AS pageable_ns,
           (g.e - g.s) - coalesce(b.busy_ns, 0) AS idle_ns,
           coalesce(y.sync_calls, 0) AS sync_calls
    FROM seg g
    LEFT JOIN (SELECT run_id, comm, step, seq, rank, sum(sync_calls) AS sync_calls FROM host GROUP BY ALL) y
      ON y.run_id = g.run_id AND y.comm = g.comm AND y.step IS NOT DISTINCT FROM g.step AND y.seq = g.seq AND y.rank = g.rank
    LEFT JOIN gpu u ON u.run_id = g.run_id AND u.comm = g.comm AND u.step IS NOT DISTINCT FROM g.step AND u.seq = g.seq AND u.rank = g.rank
    LEFT JOIN busy b ON b.run_id = g.run_id AND b.comm = g.comm AND b.step IS NOT DISTINCT FROM g.step AND b.seq = g.seq AND b.rank = g.rank
), peers AS (
    SELECT run_id, comm, step, seq,
           median(seg_ns) AS peer_seg_ns, median(compute_ns) AS peer_compute_ns, median(mem_ns) AS peer_mem_ns,
           median(idle_ns) AS peer_idle_ns, median(kernels) AS peer_kernels, median(sync_calls) AS peer_sync_calls,
           median(pageable_ns) AS peer_pageable_ns, count(*) AS peers
    FROM per WHERE rank <> late_rank
    GROUP BY run_id, comm, step, seq
), peer_host AS (
    -- the peers' mean exposed time per host operator (a peer without the
    -- operator counts as zero)
    SELECT x.run_id, x.comm, x.step, x.seq, x.name, sum(x.exposed_ns) / any_value(p.peers) AS peer_exposed_ns
    FROM host x
    JOIN held h ON h.run_id = x.run_id AND h.comm = x.comm AND h.step IS NOT DISTINCT FROM x.step AND h.seq = x.seq AND h.late_rank <> x.rank
    JOIN peers p ON p.run_id = x.run_id AND p.comm = x.comm AND p.step IS NOT DISTINCT FROM x.step AND p.seq = x.seq
    GROUP BY ALL
), hx AS (
    -- the late rank's host operators by exposed time beyond the peers'
    SELECT l.run_id, l.comm, l.step, l.seq, l.name, l.stack_id, l.exposed_ns - coalesce(q.peer_exposed_ns, 0) AS excess_ns
    FROM host l
    JOIN held h ON h.run_id = l.run_id AND h.comm = l.comm AND h.step IS NOT DISTINCT FROM l.step AND h.seq = l.seq AND h.late_rank = l.rank
    LEFT JOIN peer_host q ON q.run_id = l.run_id AND q.comm = l.comm AND q.step IS NOT DISTINCT FROM l.step AND q.seq = l.seq AND q.name = l.name
), top_host AS (
    SELECT x.run_id, x.comm, x.step, x.seq,
           arg_max(x.name, (x.excess_ns >= 0.8 * m.best, coalesce(st.depth, 0), x.excess_ns)) AS host_op,
           arg_max(x.stack_id, (x.excess_ns >= 0.8 * m.best, coalesce(st.depth, 0), x.excess_ns)) AS host_stack_id,
           max(x.excess_ns) AS host_excess_ns
    FROM hx x
    JOIN (SELECT run_id, comm, step, seq, max(excess_ns) AS best FROM hx GROUP BY ALL) m
      ON m.run_id = x.run_id AND m.comm = x.comm AND m.step IS NOT DISTINCT FROM x.step AND m.seq = x.seq
    LEFT JOIN held h ON h.run_id = x.run_id AND h.comm = x.comm AND h.step IS NOT DISTINCT FROM x.step AND h.seq = x.seq
    LEFT JOIN stacks st ON st.run_id = x.run_id AND st.rank = h.late_rank AND st.stack_id = x.stack_id
    WHERE x.excess_ns > 0
    GROUP BY ALL
)
SELECT l.run_id, l.step, l.comm, l.seq, coalesce(l.coll_name, l.name) AS collective, l.late_rank AS rank, l.host,
       l.block_ns, l.seg_ns, p.peer_seg_ns, p.peers,
       l.compute_ns - p.peer_compute_ns AS compute_excess_ns,
       l.mem_ns - p.peer_mem_ns AS mem_excess_ns,
       l.idle_ns - p.peer_idle_ns AS idle_excess_ns,
       l.pageable_ns - p.peer_pageable_ns AS pageable_excess_ns,
       l.kernels, p.peer_kernels,
       l.sync_calls, p.peer_sync_calls,
       t.host_op, t.host_stack_id, coalesce(t.host_excess_ns, 0) AS host_excess_ns,
       l.e AS arrival_ts
FROM per l
JOIN peers p ON p.run_id = l.run_id AND p.comm = l.comm AND p.step IS NOT DISTINCT FROM l.step AND p.seq = l.seq
LEFT JOIN top_host t ON t.run_id = l.run_id AND t.comm = l.comm AND t.step IS NOT DISTINCT FROM l.step AND t.seq = l.seq
WHERE l.rank = l.late_rank;

-- Per rank: the time its analysed steps span (lo to hi); a trace without
-- steps spans its whole trace. What counters are read over.
CREATE OR REPLACE VIEW analysed_span AS
WITH sw AS (
    SELECT s.run_id, s.rank, min(s.start_ns) AS lo, max(s.end_ns) AS hi
    FROM steps s JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
    WHERE (w.step_lo IS NULL OR s.step >= w.step_lo) AND (w.step_hi IS NULL OR s.step <= w.step_hi)
    GROUP BY ALL
)
SELECT r.run_id, r.rank, r.host, coalesce(sw.lo, r.start_ns) AS lo, coalesce(sw.hi, r.end_ns) AS hi
FROM ranks r LEFT JOIN sw ON sw.run_id = r.run_id AND sw.rank = r.rank
WHERE coalesce(sw.lo, r.start_ns) IS NOT NULL;

-- Counters with the rank of their GPU: a sample that names no rank (a
-- dcgm-exporter scrape names a host and a GPU index) takes the rank whose
-- GPU work ran on that host and device (ranks.device), when exactly one rank did (with
-- CUDA_VISIBLE_DEVICES set per process every rank sees device 0, and the
-- index says nothing: rank stays NULL). Traces that name no host match the
-- counters of a run whose counters come from one host.
CREATE OR REPLACE VIEW counters_by_rank AS
WITH d AS (
    SELECT run_id, host, device, min(rank) AS rank, count(DISTINCT rank) AS ranks
    FROM ranks WHERE device IS NOT NULL
    GROUP BY run_id, host, device
), ch AS (
    SELECT run_id, count(DISTINCT host) FILTER (WHERE host <> '') AS hosts FROM counters GROUP BY run_id
)
SELECT c.run_id, coalesce(c.rank, CASE WHEN d.ranks = 1 THEN d.rank END) AS rank, c.host, c.device, c.ts, c.metric, c.value, c.labels
FROM counters c
JOIN ch ON ch.run_id = c.run_id
-- traces that name no host match the counters of the run's only host
LEFT JOIN d ON d.run_id = c.run_id AND d.device = c.device AND (d.host = c.host OR d.host = '' AND ch.hosts = 1);

-- GPU counters under one vocabulary, whatever sampled them (dcgm-exporter,
-- the agent's NVML sampler, an Nsight Systems export): each source metric
-- maps to a canonical one, scaled to its unit (MHz, W, °C, MiB, a 0-1
-- ratio, bytes per second; reasons a bitmask of NVML clock event reasons).
CREATE OR REPLACE VIEW gpu_samples AS
WITH names(source, metric, scale) AS (VALUES
    ('DCGM_FI_DEV_SM_CLOCK', 'sm_clock_mhz', 1.0),
    ('GPC Clock Frequency', 'sm_clock_mhz', 1.0),
    ('DCGM_FI_DEV_MEM_CLOCK', 'mem_clock_mhz', 1.0),
    ('DCGM_FI_DEV_POWER_USAGE', 'power_w', 1.0),
    ('DCGM_FI_DEV_POWER_MGMT_LIMIT', 'power_limit_w', 1.0),
    ('DCGM_FI_DEV_ENFORCED_POWER_LIMIT', 'power_limit_w', 1.0),
    ('DCGM_FI_DEV_GPU_TEMP', 'temp_c', 1.0),
    ('DCGM_FI_DEV_MEMORY_TEMP', 'mem_temp_c', 1.0),
    ('DCGM_FI_DEV_GPU_UTIL', 'gpu_util', 0.01),
    ('DCGM_FI_DEV_MEM_COPY_UTIL', 'mem_util', 0.01),
    ('DCGM_FI_DEV_FB_USED', 'fb_used_mib', 1.0),
    ('DCGM_FI_DEV_FB_FREE', 'fb_free_mib', 1.0),
    ('DCGM_FI_DEV_FB_RESERVED', 'fb_reserved_mib', 1.0),
    ('DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'clock_reasons', 1.0),
    ('DCGM_FI_DEV_CLOCKS_EVENT_REASONS', 'clock_reasons', 1.0),
    ('DCGM_FI_DEV_XID_ERRORS', 'xid', 1.0),
    ('DCGM_FI_DEV_ECC_DBE_VOL_TOTAL', 'ecc_dbe', 1.0),
    ('DCGM_FI_DEV_ECC_SBE_VOL_TOTAL', 'ecc_sbe', 1.0),
    ('DCGM_FI_DEV_PCIE_REPLAY_COUNTER', 'pcie_replays', 1.0),
    ('DCGM_FI_PROF_GR_ENGINE_ACTIVE', 'gr_active', 1.0),
    ('DCGM_FI_PROF_SM_ACTIVE', 'sm_active', 1.0),
    ('SM Active', 'sm_active', 0.01),
    ('DCGM_FI_PROF_SM_OCCUPANCY', 'sm_occupancy', 1.0),
    ('DCGM_FI_PROF_PIPE_TENSOR_ACTIVE', 'tensor_active', 1.0),
    ('Tensor Active', 'tensor_active', 0.01),
    ('DCGM_FI_PROF_DRAM_ACTIVE', 'dram_active', 1.0),
    ('DCGM_FI_PROF_PCIE_TX_BYTES', 'pcie_tx_bps', 1.0),
    ('DCGM_FI_PROF_PCIE_RX_BYTES', 'pcie_rx_bps', 1.0),
    ('DCGM_FI_PROF_NVLINK_TX_BYTES', 'nvlink_tx_bps', 1.0),
    ('DCGM_FI_PROF_NVLINK_RX_BYTES', 'nvlink_rx_bps', 1.0),
    ('TRAINSCOPE_GPU_LOST', 'gpu_lost', 1.0)
)
SELECT c.run_id, c.rank, c.host, c.device, c.ts, n.metric, c.value * n.scale AS value, c.labels
FROM counters_by_rank c
JOIN names n ON n.source = c.metric;

-- gpu_counters' metrics of each rank side by side, one column per metric,
-- pivoted back from the long metrics table: for dashboards (the run
-- drill-down's GPU counters panel) and SQL clients. The detectors read
-- the same rows, typed, from gpu_counters' own table, metric_gpu_counters
-- (one row per run and rank, made once by the runner and documented with
-- COMMENT ON), which costs them less than this pivot. The view is not
-- defined over that table: DuckDB binds a view when it is created, and the
-- table exists only once gpu_counters has run (and takes the detector's
-- columns, which a database made by another version may lack).
CREATE OR REPLACE VIEW gpu_counters_wide AS
SELECT run_id, rank, any_value(subject) AS subject,
       max(value) FILTER (WHERE metric = 'samples') AS samples,
       max(value) FILTER (WHERE metric = 'in_window') AS in_window,
       max(value) FILTER (WHERE metric = 'sm_clock_mhz') AS sm_clock_mhz,
       max(value) FILTER (WHERE metric = 'sm_clock_min_mhz') AS sm_clock_min_mhz,
       max(value) FILTER (WHERE metric = 'run_sm_clock_mhz') AS run_sm_clock_mhz,
       max(value) FILTER (WHERE metric = 'clock_drop') AS clock_drop,
       max(value) FILTER (WHERE metric = 'throttle_share') AS throttle_share,
       max(value) FILTER (WHERE metric = 'throttle_reasons') AS throttle_reasons,
       max(value) FILTER (WHERE metric = 'power_w') AS power_w,
       max(value) FILTER (WHERE metric = 'power_limit_w') AS power_limit_w,
       max(value) FILTER (WHERE metric = 'power_at_limit_share') AS power_at_limit_share,
       max(value) FILTER (WHERE metric = 'temp_max_c') AS temp_max_c,
       max(value) FILTER (WHERE metric = 'xid') AS xid,
       max(value) FILTER (WHERE metric = 'ecc_dbe_new') AS ecc_dbe_new,
       max(value) FILTER (WHERE metric = 'fb_used_max_mib') AS fb_used_max_mib,
       max(value) FILTER (WHERE metric = 'fb_used_frac') AS fb_used_frac,
       max(value) FILTER (WHERE metric = 'gpu_util') AS gpu_util,
       max(value) FILTER (WHERE metric = 'sm_active') AS sm_active,
       max(value) FILTER (WHERE metric = 'tensor_active') AS tensor_active,
       max(value) FILTER (WHERE metric = 'dram_active') AS dram_active,
       max(value) FILTER (WHERE metric = 'nvlink_bps') AS nvlink_bps,
       max(value) FILTER (WHERE metric = 'pcie_bps') AS pcie_bps,
       max(value) FILTER (WHERE metric = 'nvlink_share_of_peak') AS nvlink_share_of_peak
FROM metrics
WHERE detector = 'gpu_counters'
GROUP BY run_id, rank;

-- The roofline of every modelled host operator call in the analysis window
-- that launched GPU work (gpu/perfmodel.go gives its FLOPs and the bytes it
-- must move from its recorded shapes; the reader, the GPU time of the
-- kernels launched inside it): the least time its work takes on this GPU,
-- at the dtype's dense peak (compute_ns) or at HBM bandwidth (memory_ns),
-- whichever is longer. Ranks on a GPU the catalog does not know have none.
CREATE OR REPLACE VIEW op_roofline AS
WITH o AS (
    SELECT s.run_id, s.rank, s.step, s.name, s.op_class, s.op_shape, s.flops_dtype AS dtype, s.op_kernel AS kernel,
           coalesce(s.flops, 0) AS flops, s.op_bytes AS bytes, s.op_gpu_dur AS gpu_ns, s.op_kernels AS kernels,
           g.catalog_key AS gpu, peak_tflops(g, s.flops_dtype) * 1e12 AS peak_flops, g.hbm_gbs * 1e9 AS peak_bw
    FROM slices_detail s
    JOIN analysis_window w ON w.run_id = s.run_id AND w.rank = s.rank
    JOIN ranks r ON r.run_id = s.run_id AND r.rank = s.rank
    JOIN gpu_specs g ON g.gpu_name = r.gpu_name
    WHERE s.op_class IS NOT NULL AND s.op_gpu_dur > 0
      AND (w.step_lo IS NULL OR s.step >= w.step_lo)
      AND (w.step_hi IS NULL OR s.step <= w.step_hi)
      AND (s.step IS NOT NULL OR (w.step_lo IS NULL AND w.step_hi IS NULL))
)
SELECT *,
       1e9 * flops / peak_flops AS compute_ns,
       1e9 * bytes / peak_bw AS memory_ns,
       greatest(coalesce(1e9 * flops / peak_flops, 0), 1e9 * bytes / peak_bw) AS ideal_ns
FROM o;

-- op_roofline summed per run and unique call (operator, shape, dtype):
-- the unit the roofline detectors rank and advise on.
CREATE OR REPLACE VIEW op_roofline_shapes AS
SELECT run_id, op_class, name, op_shape, dtype, any_value(gpu) AS gpu,
       count(*) AS calls, sum(kernels) AS kernels, count(DISTINCT rank) AS ranks,
       arg_max(rank, gpu_ns) AS top_rank, arg_max(kernel, gpu_ns) AS kernel,
       sum(gpu_ns) AS gpu_ns, sum(flops) AS flops, sum(bytes) AS bytes,
       sum(compute_ns) AS compute_ns, sum(memory_ns) AS memory_ns, sum(ideal_ns) AS ideal_ns,
       any_value(peak_flops) AS peak_flops, any_value(peak_bw) AS peak_bw
FROM op_roofline
GROUP BY run_id, op_class, name, op_shape, dtype;
