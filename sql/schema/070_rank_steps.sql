-- One row per (run, rank, step): the table a fleet dashboard or an ad-hoc
-- query starts from. Step time; GPU time by kind (kernel time summed over
-- streams, so overlapping kernels count twice); its collectives' time split
-- into transfer and wait for a late peer; the step's memory peaks (the
-- trace's [memory] events); what its GPU's counters read during the step
-- (mean SM clock and power, peak temperature, the share of samples with a
-- slowing clock event reason: power cap, thermal, hardware slowdown); and
-- the parallel settings of the run's launch script.
CREATE OR REPLACE VIEW rank_steps AS
WITH g AS (
    SELECT run_id, rank, step,
           sum(dur) FILTER (WHERE kind = 'kernel') AS compute_ns,
           sum(dur) FILTER (WHERE kind IN ('memcpy', 'memset')) AS memory_ops_ns,
           count(*) FILTER (WHERE kind IN ('kernel', 'comm')) AS kernels
    FROM slices_detail
    WHERE step IS NOT NULL AND kind IN ('kernel', 'comm', 'memcpy', 'memset')
    GROUP BY ALL
), c AS (
    SELECT run_id, rank, step, sum(transfer_ns) AS comm_transfer_ns, sum(wait_ns) AS comm_wait_ns,
           count(*) FILTER (WHERE is_last) AS last_arrivals
    FROM collective_instances WHERE step IS NOT NULL
    GROUP BY ALL
), m AS (
    SELECT run_id, rank, step, max(peak_allocated_bytes) AS mem_peak_allocated_bytes, max(peak_reserved_bytes) AS mem_peak_reserved_bytes
    FROM step_memory_peaks GROUP BY ALL
), k AS (
    SELECT s.run_id, s.rank, s.step,
           avg(x.value) FILTER (WHERE x.metric = 'sm_clock_mhz') AS sm_clock_mhz,
           avg(x.value) FILTER (WHERE x.metric = 'power_w') AS power_w,
           max(x.value) FILTER (WHERE x.metric = 'temp_c') AS temp_max_c,
           avg(((x.value::UBIGINT & 236) <> 0)::INTEGER) FILTER (WHERE x.metric = 'clock_reasons') AS throttle_share,
           count(DISTINCT x.ts) AS counter_samples
    FROM steps s
    JOIN gpu_samples x ON x.run_id = s.run_id AND x.rank = s.rank AND x.ts >= s.start_ns AND x.ts < s.end_ns
    GROUP BY ALL
), sc AS (
    SELECT run_id, any_value(tp) AS tp, any_value(pp) AS pp, any_value(cp) AS cp, any_value(ep) AS ep, any_value(dp) AS dp,
           any_value(micro_batch) AS micro_batch, any_value(global_batch) AS global_batch, any_value(seq_len) AS seq_len
    FROM script_context GROUP BY run_id
)
SELECT s.run_id, s.rank, r.host, s.step, s.start_ns, s.end_ns - s.start_ns AS step_ns,
       g.compute_ns, g.memory_ops_ns, g.kernels,
       c.comm_transfer_ns, c.comm_wait_ns, c.last_arrivals,
       m.mem_peak_allocated_bytes, m.mem_peak_reserved_bytes,
       k.sm_clock_mhz, k.power_w, k.temp_max_c, k.throttle_share, coalesce(k.counter_samples, 0) AS counter_samples,
       sc.tp, sc.pp, sc.cp, sc.ep, sc.dp, sc.micro_batch, sc.global_batch, sc.seq_len
FROM steps s
LEFT JOIN ranks r ON r.run_id = s.run_id AND r.rank = s.rank
LEFT JOIN g ON g.run_id = s.run_id AND g.rank = s.rank AND g.step = s.step
LEFT JOIN c ON c.run_id = s.run_id AND c.rank = s.rank AND c.step = s.step
LEFT JOIN m ON m.run_id = s.run_id AND m.rank = s.rank AND m.step = s.step
LEFT JOIN k ON k.run_id = s.run_id AND k.rank = s.rank AND k.step = s.step
LEFT JOIN sc ON sc.run_id = s.run_id;
