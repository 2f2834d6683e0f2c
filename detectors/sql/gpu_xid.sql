-- name: gpu_xid
-- category: reliability
-- kind: finding
-- severity: critical
-- description: a GPU that reported an XID error (DCGM_FI_DEV_XID_ERRORS, the agent's NVML event watch), new double-bit ECC errors, or that NVML lost (fell off the bus) in the run's samples, with the XID's meaning: a cause of hangs, crashed kernels and NaNs that no trace shows
-- fix: look the XID up in NVIDIA's XID catalog and the node's kernel log (dmesg | grep -i xid); 48, 63, 64, 94 and 95 are memory errors (reset the GPU, have it serviced if they recur), 74 an NVLink error, 79 a GPU that fell off the bus (drain the node); 13, 31 and 43 usually come from the job itself (an illegal memory access: rerun with CUDA_LAUNCH_BLOCKING=1 or compute-sanitizer)
-- shows: hang
-- evidence: hang
WITH x AS (
    SELECT run_id, host, device, any_value(rank) AS rank,
           arg_max(value, ts) FILTER (WHERE metric = 'xid' AND value > 0) AS last_xid,
           list_sort(list(DISTINCT value::INTEGER) FILTER (WHERE metric = 'xid' AND value > 0)) AS xids,
           min(ts) FILTER (WHERE metric = 'xid' AND value > 0) AS first_ts,
           max(value) FILTER (WHERE metric = 'ecc_dbe') - min(value) FILTER (WHERE metric = 'ecc_dbe') AS dbe_new,
           coalesce(max(value) FILTER (WHERE metric = 'gpu_lost'), 0) > 0 AS lost
    FROM gpu_samples
    WHERE metric IN ('xid', 'ecc_dbe', 'gpu_lost')
    GROUP BY run_id, host, device
)
SELECT run_id, rank, host,
       printf('%s gpu %s', host, coalesce(device::VARCHAR, '?')) AS subject,
       CASE WHEN last_xid IS NOT NULL THEN 'xid' WHEN lost THEN 'gpu_lost' ELSE 'ecc_dbe_new' END AS metric,
       coalesce(last_xid, CASE WHEN lost THEN 1 END, dbe_new) AS value,
       0 AS threshold,
       printf('%s%s reported %s%s',
              coalesce(printf('rank %d''s GPU, ', rank), ''), printf('%s gpu %s', host, coalesce(device::VARCHAR, '?')),
              CASE WHEN last_xid IS NOT NULL THEN xid_text(last_xid) || CASE WHEN len(xids) > 1 THEN printf(' (XIDs seen: %s)', array_to_string(xids, ', ')) ELSE '' END
                   ELSE '' END,
              CASE WHEN coalesce(dbe_new, 0) > 0 THEN printf('%s%.0f new double-bit ECC error(s)', CASE WHEN last_xid IS NOT NULL THEN '; ' ELSE '' END, dbe_new) ELSE '' END
                || CASE WHEN lost THEN CASE WHEN last_xid IS NOT NULL OR coalesce(dbe_new, 0) > 0 THEN '; ' ELSE '' END || 'then NVML lost it (fallen off the bus)' ELSE '' END) AS message,
       'a GPU error can hang or kill the job (its peers wait at the next collective) or corrupt results' AS impact,
       'no XID and no new ECC error in the next run''s samples of this GPU' AS validation,
       'measured' AS confidence,
       json_object('xid', last_xid, 'xids', xids, 'first_ts', first_ts, 'ecc_dbe_new', dbe_new, 'lost', lost, 'device', device)::VARCHAR AS evidence
FROM x
WHERE last_xid IS NOT NULL OR coalesce(dbe_new, 0) > 0 OR lost
ORDER BY run_id, host, device
