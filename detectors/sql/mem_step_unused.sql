-- name: mem_step_unused
-- category: memory
-- kind: finding
-- severity: warn
-- description: ranks whose caching allocator, at a step's allocation peak, holds much more than live tensors use (from the trace's [memory] events), as memory other work on the GPU cannot use
-- threshold: min_unused_ratio = 0.25  # unused at peak / peak reserved
-- threshold: min_unused_bytes = 1073741824  # ignore less than this (1 GiB)
-- fix: the reserve is larger than the peak needs: take a memory snapshot (torch.cuda.memory._snapshot) at the peak and run trainscope profile --memory on it to see whether fragmentation (try expandable_segments:True) or a transient early peak (release with empty_cache between phases) holds it
WITH m AS (
    SELECT run_id, rank, subject, step_lo AS step,
           max(peak_reserved_bytes) AS reserved, max(peak_allocated_bytes) AS allocated, max(unused_at_peak_bytes) AS unused
    FROM metric_mem_step_peaks
    GROUP BY run_id, rank, subject, step_lo
), w AS (
    SELECT run_id, rank, subject, min(step) AS step_lo, max(step) AS step_hi,
           arg_max(unused, (unused / reserved, -step)) AS unused, arg_max(reserved, (unused / reserved, -step)) AS reserved,
           arg_max(allocated, (unused / reserved, -step)) AS allocated, arg_max(step, (unused / reserved, -step)) AS worst_step,
           count(*) AS steps
    FROM m WHERE reserved > 0
    GROUP BY run_id, rank, subject
)
SELECT run_id, rank, step_lo, step_hi, subject,
       'unused_at_peak_ratio' AS metric,
       unused / reserved AS value,
       $min_unused_ratio AS threshold,
       printf('rank %d %s: at the allocation peak of step %d, %.2f GiB of the %.2f GiB reserved holds no tensor (peak allocated %.2f GiB)',
              rank, subject, worst_step, unused / 2^30, reserved / 2^30, allocated / 2^30) AS message,
       'hypothesis' AS confidence,
       'a CUDA memory snapshot taken at the peak (torch.cuda.memory._snapshot(), exported as JSON), for trainscope profile --memory' AS needs,
       printf('up to %.2f GiB more for the step''s peak', unused / 2^30) AS impact,
       json_object('step', worst_step, 'peak_reserved_bytes', reserved, 'peak_allocated_bytes', allocated, 'steps', steps)::VARCHAR AS evidence
FROM w
WHERE unused / reserved >= $min_unused_ratio AND unused >= $min_unused_bytes
ORDER BY run_id, rank, subject
