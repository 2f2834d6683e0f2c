-- name: mem_oom
-- category: memory
-- kind: finding
-- severity: critical
-- description: out-of-memory events in the allocator trace, with the request that failed and the memory the device had free at that moment
-- fix: lower the peak at the failing site: activation checkpointing, a smaller micro-batch or sequence length, sharding optimizer state or parameters (ZeRO/FSDP), or expandable_segments:True when reserved-but-free memory is fragmented
SELECT run_id, rank, coalesce(frame, 'unknown site') AS subject,
       'oom_events' AS metric,
       count(*) AS value,
       printf('%d out-of-memory event(s) on device %d; the first asked for %.2f GiB with %.2f GiB free on the device', count(*), min(device),
              arg_min(size, seq) / 2^30, arg_min(device_free, seq) / 2^30) AS message,
       'the step completes without the out-of-memory error' AS impact,
       'no oom entries in the allocator trace of the next snapshot' AS validation,
       json_object('requested_bytes', arg_min(size, seq), 'device_free_bytes', arg_min(device_free, seq), 'first_seq', min(seq))::VARCHAR AS evidence
FROM mem_events
WHERE action = 'oom'
GROUP BY run_id, rank, coalesce(frame, 'unknown site')
ORDER BY run_id, rank, subject
