-- name: bottleneck_class
-- category: summary
-- kind: finding
-- severity: info
-- description: the run's primary bottleneck class (communication, sync, launch-overhead, host, or GPU-bound) and the evidence that decided it, checked in that order, except that an idle GPU outranks exposed communication when it costs more of the span (mean idle over the worst rank's exposed communication)
-- threshold: comm_ratio = 0.10  # worst rank's exposed communication / GPU span
-- threshold: idle_ratio = 0.20  # mean GPU idle / GPU span
-- threshold: sync_ratio = 0.05  # worst rank's host time in synchronizing calls / GPU span
-- threshold: short_ratio = 0.30  # mean share of kernels shorter than their launch
-- threshold: min_kernels = 50  # fewer GPU activities than this in the window are too few to classify
WITH n AS (
    SELECT run_id, count(*) AS kernels FROM gpu_window GROUP BY run_id
), t AS (
    SELECT run_id,
           avg(idle_pct) / 100 AS idle, avg(compute_pct) / 100 AS compute, avg(non_compute_pct) / 100 AS non_compute,
           count(DISTINCT rank) AS ranks
    FROM metric_temporal_breakdown
    GROUP BY run_id
), c AS (
    SELECT run_id, max(exposed_comm_pct) / 100 AS exposed, arg_max(rank, (exposed_comm_pct, -rank)) AS worst_rank
    FROM metric_comm_comp_overlap
    GROUP BY run_id
), l AS (
    SELECT run_id, avg(short_pct) / 100 AS short
    FROM metric_kernel_launch_stats
    GROUP BY run_id
), sy AS (
    SELECT h.run_id, h.rank, sum(h.total_ns) AS sync_ns, sum(h.calls) AS calls
    FROM host_op_time h
    WHERE h.kind IN ('runtime', 'driver')
      AND (h.name LIKE '%Synchronize%' OR h.name IN ('cudaMemcpy', 'hipMemcpy', 'cudaMemset', 'hipMemset'))
    GROUP BY h.run_id, h.rank
), s AS (
    SELECT sy.run_id, max(sy.sync_ns / sp.span_ns) AS sync, arg_max(sy.rank, (sy.sync_ns / sp.span_ns, -sy.rank)) AS worst_rank,
           sum(sy.calls) AS calls
    FROM sy JOIN gpu_span sp ON sp.run_id = sy.run_id AND sp.rank = sy.rank
    GROUP BY sy.run_id
), rf AS (
    -- the roofline of the operators whose shapes the trace recorded
    SELECT run_id,
           max(coverage_pct) AS coverage, max(compute_bound_pct) AS rf_compute, max(memory_bound_pct) AS rf_memory,
           max(latency_bound_pct) AS rf_latency, max(roof_pct) AS rf_roof
    FROM metric_roofline WHERE subject = 'all'
    GROUP BY run_id
), j AS (
    SELECT t.run_id, t.ranks, n.kernels, t.idle, t.compute, t.non_compute,
           rf.coverage, rf.rf_compute, rf.rf_memory, rf.rf_latency, rf.rf_roof,
           coalesce(c.exposed, 0) AS exposed, c.worst_rank AS comm_rank,
           coalesce(l.short, 0) AS short,
           coalesce(s.sync, 0) AS sync, s.worst_rank AS sync_rank, coalesce(s.calls, 0) AS sync_calls
    FROM t JOIN n USING (run_id) LEFT JOIN c USING (run_id) LEFT JOIN l USING (run_id) LEFT JOIN s USING (run_id) LEFT JOIN rf USING (run_id)
), k AS (
    SELECT *,
           CASE WHEN kernels < $min_kernels THEN 'unclassified'
                WHEN exposed >= $comm_ratio AND NOT (idle >= $idle_ratio AND idle > exposed) THEN 'communication-bound'
                WHEN idle >= $idle_ratio AND sync >= $sync_ratio THEN 'sync-bound'
                WHEN idle >= $idle_ratio AND short >= $short_ratio THEN 'launch-overhead-bound'
                WHEN idle >= $idle_ratio THEN 'host-bound'
                ELSE 'gpu-bound' END AS class
    FROM j
)
SELECT run_id,
       class AS subject,
       'bottleneck_class' AS metric,
       CASE class WHEN 'communication-bound' THEN exposed WHEN 'sync-bound' THEN sync
                  WHEN 'launch-overhead-bound' THEN short WHEN 'host-bound' THEN idle
                  WHEN 'unclassified' THEN kernels ELSE compute END AS value,
       CASE class WHEN 'communication-bound' THEN $comm_ratio WHEN 'sync-bound' THEN $sync_ratio
                  WHEN 'launch-overhead-bound' THEN $short_ratio WHEN 'host-bound' THEN $idle_ratio
                  WHEN 'unclassified' THEN $min_kernels END AS threshold,
       CASE class
           WHEN 'unclassified' THEN printf('too little GPU work to classify: %d GPU activities in the analysis window (at least %d needed)', kernels, $min_kernels::BIGINT)
           WHEN 'communication-bound' THEN printf('communication-bound: on rank %d, %.1f%% of the GPU span is communication that no compute hides (threshold %.0f%%); GPU idle averages %.1f%% over %d ranks',
                                                  comm_rank, 100 * exposed, 100 * $comm_ratio, 100 * idle, ranks)
           WHEN 'sync-bound' THEN printf('sync-bound: the GPU is idle %.1f%% of its span and rank %d spends %.1f%% of it in %d synchronizing calls (threshold %.0f%%)',
                                         100 * idle, sync_rank, 100 * sync, sync_calls::BIGINT, 100 * $sync_ratio)
           WHEN 'launch-overhead-bound' THEN printf('launch-overhead-bound: the GPU is idle %.1f%% of its span and %.0f%% of kernels run shorter than their launch call (thresholds %.0f%% and %.0f%%)',
                                                    100 * idle, 100 * short, 100 * $idle_ratio, 100 * $short_ratio)
           WHEN 'host-bound' THEN printf('host-bound: the GPU is idle %.1f%% of its span (threshold %.0f%%) while kernels are not short and synchronization is low: the CPU side (Python, data loading) sets the pace',
                                         100 * idle, 100 * $idle_ratio)
           ELSE CASE WHEN coverage IS NOT NULL
           THEN printf('GPU-bound: kernels keep the GPU busy %.1f%% of its span (compute %.1f%%, communication or memory only %.1f%%); of the compute-kernel time whose operators have a roofline from their shapes (%.0f%% of it), %.0f%% is memory-bound, %.0f%% compute-bound and %.0f%% latency-bound, at %.0f%% of the roofline (roofline metric)',
                       100 * (1 - idle), 100 * compute, 100 * non_compute, coverage, rf_memory, rf_compute, rf_latency, rf_roof)
           ELSE printf('GPU-bound: kernels keep the GPU busy %.1f%% of its span (compute %.1f%%, communication or memory only %.1f%%); whether compute or memory bandwidth limits them needs the operators'' shapes (record_shapes=True) or hardware counters (DCGM, Nsight Compute), which this trace does not carry',
                       100 * (1 - idle), 100 * compute, 100 * non_compute) END
       END AS message,
       json_object('idle_ratio', round(idle, 4), 'compute_ratio', round(compute, 4), 'exposed_comm_ratio', round(exposed, 4),
                   'short_kernel_ratio', round(short, 4), 'sync_ratio', round(sync, 4), 'ranks', ranks,
                   'roofline_coverage_pct', coverage, 'memory_bound_pct', rf_memory, 'compute_bound_pct', rf_compute,
                   'latency_bound_pct', rf_latency, 'roof_pct', rf_roof)::VARCHAR AS evidence
FROM k
ORDER BY run_id
