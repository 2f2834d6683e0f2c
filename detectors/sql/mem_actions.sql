-- name: mem_actions
-- category: memory
-- kind: metric
-- order: 160
-- description: per snapshot device, the allocator trace's action counts (alloc, free_requested, free_completed, segment_alloc, segment_free, oom, snapshot), the window it covers, and cudaMalloc/cudaFree churn as segment allocations and frees per second
SELECT run_id, rank, 'device ' || device AS subject,
       count(*) AS entries,
       count(*) FILTER (WHERE action = 'alloc') AS alloc,
       count(*) FILTER (WHERE action = 'free_requested') AS free_requested,
       count(*) FILTER (WHERE action = 'free_completed') AS free_completed,
       count(*) FILTER (WHERE action = 'segment_alloc') AS segment_alloc,
       count(*) FILTER (WHERE action = 'segment_free') AS segment_free,
       count(*) FILTER (WHERE action = 'oom') AS oom,
       count(*) FILTER (WHERE action = 'snapshot') AS snapshot,
       coalesce(max(ts) - min(ts), 0) AS window_ns,
       CASE WHEN max(ts) > min(ts)
            THEN (count(*) FILTER (WHERE action IN ('segment_alloc', 'segment_free'))) / ((max(ts) - min(ts)) / 1e9)
            ELSE 0.0 END AS segment_ops_per_s
FROM mem_events
GROUP BY run_id, rank, device
ORDER BY run_id, rank, device
