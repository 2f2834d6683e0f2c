-- name: kernel_limits
-- category: compute
-- kind: finding
-- severity: warn
-- description: kernels that Nsight Compute profiled (kernel_metrics) and measured far from both roofs: compute (SM) and memory throughput each under max_sol_pct of peak, which ncu itself reads as latency-bound; with why when the export says it: theoretical occupancy under max_occupancy_pct limited by registers or shared memory (too few warps to hide latency), else too few blocks for the GPU or stalls. Ranked by the trace's GPU time in kernels of the same name where the run has a trace, else by profiled time; top per run
-- threshold: max_sol_pct = 60  # compute and memory throughput both under this percentage of peak (ncu's own line for latency issues)
-- threshold: max_occupancy_pct = 50  # theoretical occupancy under this, set by registers or shared memory, is the limiter
-- threshold: top = 5  # findings per run at most
-- fix: for a kernel whose occupancy registers or shared memory cap, lower the per-thread registers (__launch_bounds__, maxrregcount, smaller tiles) or the shared memory per block so that more warps fit; for a grid too small for the GPU, give the kernel more work per launch (larger batch, fused operators) or capture the sequence in CUDA graphs; act on the ncu rule hints named
WITH f AS (
    SELECT run_id, kernel, launches, duration_ns, trace_calls, trace_ns,
           sol_compute_pct AS c, sol_memory_pct AS m, theoretical_occupancy_pct AS occ_t, achieved_occupancy_pct AS occ_a,
           occupancy_limiter AS limiter, registers, shared_mem, grid_blocks AS blocks, waves_per_sm AS waves, rules, top_stall AS stall,
           row_number() OVER (PARTITION BY run_id ORDER BY coalesce(trace_ns, 0) DESC, launches * coalesce(duration_ns, 0) DESC, kernel) AS pos
    FROM kernel_profiles
    WHERE greatest(coalesce(sol_compute_pct, 0), coalesce(sol_memory_pct, 0)) < $max_sol_pct AND (sol_compute_pct IS NOT NULL OR sol_memory_pct IS NOT NULL)
)
SELECT run_id,
       clip(kernel, 160) AS subject,
       'sol_pct' AS metric,
       round(greatest(coalesce(c, 0), coalesce(m, 0)) / 100, 4) AS value,
       $max_sol_pct / 100 AS threshold,
       printf('%s reaches %.0f%% of compute and %.0f%% of memory throughput (Nsight Compute, %d launch(es)%s): far from both roofs, latency-bound. %s%s',
              clip(kernel, 100),
              coalesce(c, 0), coalesce(m, 0), launches,
              CASE WHEN duration_ns IS NOT NULL THEN ', ' || fmt_ns(duration_ns) || ' each' ELSE '' END,
              CASE WHEN occ_t < $max_occupancy_pct AND limiter IN ('Registers', 'Shared Mem')
                   THEN printf('Its theoretical occupancy is %.0f%% (achieved %.0f%%), capped by %s%s: too few warps per SM to hide memory latency.',
                               occ_t, coalesce(occ_a, 0), CASE limiter WHEN 'Registers' THEN 'registers' ELSE 'shared memory' END,
                               CASE WHEN limiter = 'Registers' AND registers IS NOT NULL THEN printf(' (%d per thread)', registers::BIGINT)
                                    WHEN limiter = 'Shared Mem' AND shared_mem > 0 THEN printf(' (%s per block)', fmt_bytes(shared_mem)) ELSE '' END)
                   WHEN waves IS NOT NULL AND waves < 1
                   THEN printf('Its grid of %d block(s) fills %.2f of a wave: most of the GPU''s SMs have nothing to run.', coalesce(blocks, 0)::BIGINT, waves)
                   WHEN stall IS NOT NULL
                   THEN printf('Its warps stall most on %s.', replace(stall, '_', ' '))
                   ELSE 'Its warps stall more than they issue: see the ncu hints.' END,
              CASE WHEN len(rules) > 0 THEN ' ncu hints: ' || array_to_string(rules, ', ') || '.' ELSE '' END) AS message,
       CASE WHEN trace_ns IS NOT NULL THEN printf('%s of GPU time in the trace (%d calls)', fmt_ns(trace_ns), trace_calls)
            ELSE 'the trace has no kernel of this name' END AS impact,
       'the kernel_sol metric of the same run, and ncu --set full on the kernel for its warp stall reasons' AS validation,
       'measured' AS confidence,
       json_object('kernel', kernel, 'sol_compute_pct', round(c, 2), 'sol_memory_pct', round(m, 2), 'theoretical_occupancy_pct', round(occ_t, 2),
                   'achieved_occupancy_pct', round(occ_a, 2), 'limiter', limiter, 'registers', registers, 'shared_mem', shared_mem,
                   'blocks', blocks, 'waves_per_sm', waves, 'top_stall', stall, 'rules', rules, 'trace_ns', trace_ns, 'launches', launches)::VARCHAR AS evidence
FROM f
WHERE pos <= $top
ORDER BY run_id, pos
