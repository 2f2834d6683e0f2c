-- name: mem_step_peaks
-- category: memory
-- kind: metric
-- order: 140
-- description: per rank, device and ProfilerStep, the peak memory allocated to tensors and the peak reserved by the caching allocator, from the trace's [memory] events (profile_memory=True), and how much of the reserve was unused at the allocation peak
SELECT run_id, rank, step AS step_lo, step AS step_hi, 'device ' || device AS subject,
       peak_allocated_bytes, peak_reserved_bytes,
       peak_reserved_bytes - peak_allocated_bytes AS unused_at_peak_bytes,
       samples
FROM step_memory_peaks
WHERE peak_allocated_bytes IS NOT NULL
ORDER BY run_id, rank, device, step
