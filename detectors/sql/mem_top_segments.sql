-- name: mem_top_segments
-- category: memory
-- kind: metric
-- order: 180
-- description: the largest segments of each snapshot: size, bytes allocated in them, block count, pool and the site that allocated them
-- threshold: top_n = 10  # segments listed per snapshot
SELECT run_id, rank, printf('0x%x', address) AS segment, segment_type, pool, coalesce(frame, '') AS site,
       device, total_size AS total_bytes, allocated_size AS allocated_bytes, blocks
FROM mem_segments
QUALIFY row_number() OVER (PARTITION BY run_id, rank ORDER BY total_size DESC, address) <= $top_n
ORDER BY run_id, rank, total_size DESC, address
