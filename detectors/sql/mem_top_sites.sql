-- name: mem_top_sites
-- category: memory
-- kind: metric
-- order: 170
-- description: the allocation sites (first frame outside torch) that requested the most bytes in the allocator trace, with how many allocations and the largest one
-- threshold: top_n = 10  # sites listed per snapshot
SELECT run_id, rank, frame AS site, count(*) AS allocs, sum(size) AS alloc_bytes, max(size) AS largest_bytes
FROM mem_events
WHERE action = 'alloc' AND frame IS NOT NULL
GROUP BY run_id, rank, frame
QUALIFY row_number() OVER (PARTITION BY run_id, rank ORDER BY sum(size) DESC, frame) <= $top_n
ORDER BY run_id, rank, alloc_bytes DESC, site
