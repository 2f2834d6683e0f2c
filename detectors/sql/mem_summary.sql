-- name: mem_summary
-- category: memory
-- kind: metric
-- order: 150
-- description: per snapshot device, the caching allocator's reserved, allocated, active and requested bytes, segment and block counts, free memory and its fragmentation (1 - largest free block / all free bytes), free bytes split off segments still in use, and rounding waste (block size - requested size of live blocks)
WITH seg AS (
    SELECT run_id, rank, device, count(*) AS segments, sum(blocks) AS blocks,
           sum(total_size) AS reserved_bytes, sum(allocated_size) AS allocated_bytes,
           sum(active_size) AS active_bytes, sum(requested_size) AS requested_bytes
    FROM mem_segments
    GROUP BY run_id, rank, device
), blk AS (
    SELECT b.run_id, b.rank, b.device,
           coalesce(sum(b.size) FILTER (WHERE b.state = 'inactive'), 0) AS free_bytes,
           coalesce(max(b.size) FILTER (WHERE b.state = 'inactive'), 0) AS largest_free_bytes,
           coalesce(sum(b.size) FILTER (WHERE b.state = 'inactive' AND s.allocated_size > 0), 0) AS split_free_bytes,
           coalesce(sum(b.size - b.requested_size) FILTER (WHERE b.state = 'active_allocated'), 0) AS rounding_waste_bytes
    FROM mem_blocks b
    JOIN mem_segments s ON s.run_id = b.run_id AND s.rank = b.rank AND s.device = b.device AND s.address = b.segment_address
    GROUP BY b.run_id, b.rank, b.device
)
SELECT seg.run_id, seg.rank, 'device ' || seg.device AS subject,
       segments, blocks, reserved_bytes, allocated_bytes, active_bytes, requested_bytes,
       reserved_bytes - allocated_bytes AS unused_bytes,
       coalesce(free_bytes, 0) AS free_bytes,
       coalesce(largest_free_bytes, 0) AS largest_free_bytes,
       CASE WHEN coalesce(free_bytes, 0) > 0 THEN 100.0 * (1 - largest_free_bytes / free_bytes) ELSE 0.0 END AS fragmentation_pct,
       coalesce(split_free_bytes, 0) AS split_free_bytes,
       coalesce(rounding_waste_bytes, 0) AS rounding_waste_bytes
FROM seg LEFT JOIN blk ON blk.run_id = seg.run_id AND blk.rank = seg.rank AND blk.device = seg.device
ORDER BY seg.run_id, seg.rank, seg.device
