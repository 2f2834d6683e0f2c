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
CREATE OR REPLACE VIEW collective_instances AS
WITH c AS (
    SELECT run_id, rank, host, step, name, coll_name, ts, end_ts, coll_in_elems, coll_dtype,
           coalesce(pg_ranks, pg_name, 'stream ' || stream) AS comm,
           row_number() OVER (PARTITION BY run_id, rank, coalesce(pg_ranks, pg_name, 'stream ' || stream), coalesce(step, -1)
                              ORDER BY ts, end_ts) AS seq
    FROM gpu_window
    WHERE class = 'COMM'
), inst AS (
    SELECT run_id, comm, coalesce(step, -1) AS step_key, seq, quantile_disc(end_ts, 0.5) AS med_end, count(*) AS members
    FROM c
    GROUP BY run_id, comm, coalesce(step, -1), seq
    HAVING count(DISTINCT rank) >= 2 AND count(DISTINCT coalesce(coll_name, name)) = 1
), off AS (
    SELECT c.run_id, c.rank, quantile_disc(c.end_ts - i.med_end, 0.5) AS clock_offset_ns
    FROM c JOIN inst i ON i.run_id = c.run_id AND i.comm = c.comm AND i.step_key = coalesce(c.step, -1) AND i.seq = c.seq
    GROUP BY c.run_id, c.rank
)
SELECT c.run_id, c.comm, c.step, c.seq, c.rank, c.host, c.name, c.coll_name, i.members,
       c.ts, c.end_ts, o.clock_offset_ns,
       c.ts - o.clock_offset_ns AS arrival_ns,
       c.end_ts - o.clock_offset_ns AS aligned_end_ns
FROM c
JOIN inst i ON i.run_id = c.run_id AND i.comm = c.comm AND i.step_key = coalesce(c.step, -1) AND i.seq = c.seq
JOIN off o ON o.run_id = c.run_id AND o.rank = c.rank;

-- Per collective instance: who arrived last and how long the others waited.
CREATE OR REPLACE VIEW collective_waits AS
SELECT run_id, comm, step, seq, any_value(coalesce(coll_name, name)) AS collective, count(*) AS members,
       max(arrival_ns) - min(arrival_ns) AS spread_ns,
       arg_max(rank, (arrival_ns, -rank)) AS last_rank,
       sum(max_arrival - arrival_ns) AS wait_caused_ns
FROM (SELECT *, max(arrival_ns) OVER (PARTITION BY run_id, comm, step, seq) AS max_arrival FROM collective_instances)
GROUP BY run_id, comm, step, seq;

-- Per rank: how long each combination of GPU work classes ran, from one
-- sweep over every activity in the window. state counts active COMP
-- activities in its low 20 bits, COMM in the next 20 and MEM above; use
-- the comp_active / comm_active / mem_active macros to read it.
CREATE OR REPLACE VIEW gpu_class_time AS
WITH cls AS (
    SELECT rk AS g, ts AS s, end_ts AS e,
           CASE class WHEN 'COMP' THEN 1 WHEN 'COMM' THEN 1048576 ELSE 1099511627776 END AS w
    FROM gpu_window
)
SELECT w.run_id, w.rank, c.state, c.ns FROM active_time(cls) c JOIN analysis_window w ON w.rk = c.g;

-- Host time per rank, thread and operator in the analysis window: calls,
-- total and self time, first start and last end.
CREATE OR REPLACE VIEW host_op_time AS
SELECT run_id, rank, tid, kind, name, count(*) AS calls, sum(dur) AS total_ns, sum(self_dur) AS self_ns,
       max(dur) AS longest_ns, min(ts) AS first_ts, max(ts + dur) AS last_ts
FROM host_window
WHERE self_dur IS NOT NULL
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
