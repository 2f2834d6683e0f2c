-- Nsight Compute's measurements of profiled kernel launches (ingest/ncu):
-- one row per launch and metric, or per rule hint (metric rule:<name>).
-- Columns match stream.KernelMetricsSchema in order. Values are in
-- normalised units: byte, ns, hz, byte/s; percentages as ncu gives them.
CREATE TABLE IF NOT EXISTS kernel_metrics (
    run_id  VARCHAR NOT NULL,
    rank    INTEGER,
    host    VARCHAR,
    source  VARCHAR NOT NULL, -- the export's file name
    launch  BIGINT NOT NULL,  -- ncu's ID of the launch in that export
    kernel  VARCHAR NOT NULL,
    device  INTEGER,
    cc      VARCHAR,
    grid_x  INTEGER,
    grid_y  INTEGER,
    grid_z  INTEGER,
    block_x INTEGER,
    block_y INTEGER,
    block_z INTEGER,
    stream  BIGINT,
    section VARCHAR,
    metric  VARCHAR NOT NULL,
    unit    VARCHAR,
    value   DOUBLE,
    text    VARCHAR
);

-- One row per profiled launch: ncu's measurements under one name each,
-- whichever layout the export had. Speed of light from the Speed-of-Light
-- section, or from the raw throughput metrics older exports carry; the
-- occupancy limiter is the block limit with the fewest blocks.
CREATE OR REPLACE VIEW kernel_sol AS
WITH m AS (
    SELECT run_id, rank, source, launch,
           any_value(kernel) AS kernel, any_value(grid_x) AS grid_x, any_value(grid_y) AS grid_y, any_value(grid_z) AS grid_z,
           any_value(block_x) AS block_x, any_value(block_y) AS block_y, any_value(block_z) AS block_z, any_value(cc) AS cc,
           coalesce(max(value) FILTER (WHERE metric = 'Duration'), max(value) FILTER (WHERE metric = 'gpu__time_duration.sum'),
                    1e9 * max(value) FILTER (WHERE metric = 'sm__cycles_elapsed.avg') / nullif(max(value) FILTER (WHERE metric = 'sm__cycles_elapsed.avg.per_second'), 0)) AS duration_ns,
           coalesce(max(value) FILTER (WHERE metric = 'Compute (SM) Throughput'),
                    max(value) FILTER (WHERE metric = 'sm__throughput.avg.pct_of_peak_sustained_elapsed')) AS sol_compute_pct,
           coalesce(max(value) FILTER (WHERE metric = 'Memory Throughput' AND unit = '%'),
                    max(value) FILTER (WHERE metric = 'gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed')) AS sol_memory_pct,
           coalesce(max(value) FILTER (WHERE metric = 'DRAM Throughput' AND unit = '%'),
                    max(value) FILTER (WHERE metric = 'dram__throughput.avg.pct_of_peak_sustained_elapsed')) AS dram_pct,
           coalesce(max(value) FILTER (WHERE metric = 'dram__bytes.sum'),
                    max(value) FILTER (WHERE metric = 'dram__bytes_read.sum') + coalesce(max(value) FILTER (WHERE metric = 'dram__bytes_write.sum'), 0)) AS dram_bytes,
           max(value) FILTER (WHERE metric = 'Achieved Occupancy') AS achieved_occupancy_pct,
           max(value) FILTER (WHERE metric = 'Theoretical Occupancy') AS theoretical_occupancy_pct,
           max(value) FILTER (WHERE metric = 'Registers Per Thread') AS registers,
           coalesce(max(value) FILTER (WHERE metric = 'Dynamic Shared Memory Per Block'), 0)
             + coalesce(max(value) FILTER (WHERE metric = 'Static Shared Memory Per Block'), 0) AS shared_mem,
           max(value) FILTER (WHERE metric = 'L2 Hit Rate') AS l2_hit_pct,
           coalesce(any_value(grid_x * coalesce(grid_y, 1) * coalesce(grid_z, 1)), max(value) FILTER (WHERE metric = 'Grid Size')) AS grid_blocks,
           max(value) FILTER (WHERE metric = 'Waves Per SM') AS waves_per_sm,
           max(value) FILTER (WHERE metric LIKE 'sm__pipe_tensor%pct_of_peak%' OR metric LIKE 'sm__inst_executed_pipe_tensor%pct_of_peak%') AS tensor_pct,
           max(value) FILTER (WHERE metric = 'No Eligible') AS no_eligible_pct,
           -- the stall reason warps spend most cycles in, where the export
           -- has the per-reason metrics (--section WarpStateStats, raw page)
           arg_max(regexp_replace(metric, '^smsp__(average_warp_latency|pcsamp_warps)_issue_stalled_|\.(ratio|sum|avg|pct).*$', '', 'g'), value)
             FILTER (WHERE (metric LIKE 'smsp__average_warp_latency_issue_stalled_%' OR metric LIKE 'smsp__pcsamp_warps_issue_stalled_%')
                       AND metric NOT LIKE '%not_issued%' AND metric NOT LIKE '%selected%') AS top_stall,
           arg_min(replace(metric, 'Block Limit ', ''), value) FILTER (WHERE metric IN ('Block Limit Registers', 'Block Limit Shared Mem', 'Block Limit Warps', 'Block Limit SM', 'Block Limit Barriers')) AS occupancy_limiter,
           list(DISTINCT replace(metric, 'rule:', '')) FILTER (WHERE metric LIKE 'rule:%' AND (text LIKE 'OPT%' OR text LIKE 'WRN%')) AS rules
    FROM kernel_metrics
    GROUP BY run_id, rank, source, launch
)
SELECT * FROM m;

-- Per run and profiled kernel: its launches' measurements averaged, and
-- the trace's calls and GPU time in kernels of the same name.
CREATE OR REPLACE VIEW kernel_profiles AS
WITH p AS (
    SELECT run_id, kernel, count(*) AS launches, avg(duration_ns) AS duration_ns,
           avg(sol_compute_pct) AS sol_compute_pct, avg(sol_memory_pct) AS sol_memory_pct, avg(dram_pct) AS dram_pct,
           avg(dram_bytes) AS dram_bytes, avg(achieved_occupancy_pct) AS achieved_occupancy_pct,
           avg(theoretical_occupancy_pct) AS theoretical_occupancy_pct, max(registers) AS registers, max(shared_mem) AS shared_mem,
           avg(tensor_pct) AS tensor_pct, any_value(occupancy_limiter) AS occupancy_limiter,
           min(grid_blocks) AS grid_blocks, min(waves_per_sm) AS waves_per_sm,
           list_distinct(flatten(list(rules))) AS rules, mode(top_stall) AS top_stall
    FROM kernel_sol
    GROUP BY run_id, kernel
), t AS (
    SELECT g.run_id, g.name, count(*) AS trace_calls, sum(g.dur) AS trace_ns
    FROM gpu_window g
    WHERE g.class = 'COMP' AND g.name IN (SELECT kernel FROM p)
    GROUP BY g.run_id, g.name
)
SELECT p.*, t.trace_calls, t.trace_ns,
       -- ncu's own line: under 60% of both roofs is latency-bound
       CASE WHEN p.sol_compute_pct IS NULL AND p.sol_memory_pct IS NULL THEN NULL
            WHEN greatest(coalesce(p.sol_compute_pct, 0), coalesce(p.sol_memory_pct, 0)) < 60 THEN 'latency'
            WHEN coalesce(p.sol_compute_pct, 0) >= coalesce(p.sol_memory_pct, 0) THEN 'compute' ELSE 'memory' END AS measured_bound
FROM p LEFT JOIN t ON t.run_id = p.run_id AND t.name = p.kernel;

-- op_roofline_shapes with Nsight Compute's measurement of each call's
-- longest kernel, where the run has one.
CREATE OR REPLACE VIEW op_roofline_measured AS
SELECT o.*, k.sol_compute_pct AS sol_c, k.sol_memory_pct AS sol_m, k.measured_bound
FROM op_roofline_shapes o
LEFT JOIN kernel_profiles k ON k.run_id = o.run_id AND k.kernel = o.kernel;
