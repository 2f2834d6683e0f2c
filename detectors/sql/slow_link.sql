-- name: slow_link
-- category: communication
-- kind: finding
-- severity: warn
-- description: a process group whose collectives reach a lower bus bandwidth than the other groups of its kind (same group description, collective, group size and message size, e.g. the other tensor-parallel groups), by more than min_drop and as an outlier among them (robust z-score): a slow or degraded link (NVLink, PCIe, NIC) under that group. Each collective is timed from its last member's arrival (its shortest duration over the members), so waiting for a late rank does not read as a slow link
-- threshold: min_drop = 0.20  # the group's bus bandwidth is this share below the median of its kind (0.20 = 20%)
-- threshold: min_z = 3.0  # robust z-score of the group's bus bandwidth among the groups of its kind
-- threshold: min_groups = 2  # groups of a kind to compare; with only two, the slower must reach under (1 - 2 x min_drop) of the faster, as no z-score can single one out
-- threshold: min_calls = 3  # collectives the group must have run in the window
-- fix: test the group's links in isolation (nccl-tests all_reduce_perf on exactly these ranks, nvidia-smi nvlink --status / nvidia-smi topo -m on their hosts, NIC counters and error rates for groups that span hosts); a link trained down to a lower width or speed, a failed NVLink lane or a flapping NIC shows here; move the job off the link or drain the node
-- cause: slow_link
WITH inst AS (
    -- one collective instance (collective_instances: matched across ranks
    -- by communicator, step and order, NCCL running a communicator's
    -- collectives in the same order on every member; two members or more,
    -- one collective); the last member to arrive waits for no one, so the
    -- shortest duration is the transfer itself
    SELECT run_id, comm, coalesce(step, -1) AS step, seq, any_value(coalesce(pg_desc, '')) AS descr,
           any_value(coalesce(coll_name, name)) AS coll,
           any_value(coll_group_size) AS n, any_value(bytes) AS bytes, min(end_ts - ts) AS xfer_ns,
           string_agg(DISTINCT host, ',' ORDER BY host) AS hosts
    FROM collective_instances
    GROUP BY run_id, comm, coalesce(step, -1), seq
    HAVING any_value(bytes) > 0
), g AS (
    SELECT run_id, comm, descr, coll, n, bytes, count(*) AS calls, median(xfer_ns) AS xfer_ns,
           bytes / median(xfer_ns) * bus_factor(coll, n) AS busbw_gbps,
           string_agg(DISTINCT hosts, ',') AS hosts
    FROM inst
    GROUP BY run_id, comm, descr, coll, n, bytes
    HAVING count(*) >= $min_calls AND median(xfer_ns) > 0
), k AS (
    -- the groups of one kind, and their median bus bandwidth
    SELECT run_id, descr, coll, n, bytes, count(*) AS groups, median(busbw_gbps) AS med_gbps, max(busbw_gbps) AS max_gbps
    FROM g GROUP BY run_id, descr, coll, n, bytes
    HAVING count(*) >= $min_groups
), z AS (
    SELECT g.*, k.groups, k.med_gbps, k.max_gbps,
           -- a 5% floor under the MAD: healthy groups that agree closely must
           -- not make run-to-run noise an outlier
           (k.med_gbps - g.busbw_gbps) / greatest(
               (SELECT median(abs(x.busbw_gbps - k.med_gbps)) FROM g x
                WHERE x.run_id = g.run_id AND x.descr = g.descr AND x.coll = g.coll AND x.n IS NOT DISTINCT FROM g.n AND x.bytes = g.bytes),
               0.05 * k.med_gbps) AS z
    FROM g JOIN k ON k.run_id = g.run_id AND k.descr = g.descr AND k.coll = g.coll AND k.n IS NOT DISTINCT FROM g.n AND k.bytes = g.bytes
)
SELECT run_id,
       CASE WHEN hosts NOT LIKE '%,%' THEN hosts END AS host,
       trim(descr || ' ' || comm || ' ' || coll) AS subject,
       'busbw_drop' AS metric,
       1 - busbw_gbps / CASE WHEN groups = 2 THEN max_gbps ELSE med_gbps END AS value,
       $min_drop AS threshold,
       CASE WHEN groups = 2 THEN
       printf('process group %s%s reaches %.1f GB/s bus bandwidth on %s of %s, %.0f%% below the %.1f GB/s of the only other %s group of its kind (%d calls)',
              CASE WHEN descr <> '' THEN descr || ' ' ELSE '' END, comm, busbw_gbps, coll, fmt_bytes(bytes),
              100 * (1 - busbw_gbps / max_gbps), max_gbps, coll, calls)
       ELSE
       printf('process group %s%s reaches %.1f GB/s bus bandwidth on %s of %s, %.0f%% below the median %.1f GB/s of the %d %s groups of its kind (robust z %.1f, %d calls)',
              CASE WHEN descr <> '' THEN descr || ' ' ELSE '' END, comm, busbw_gbps, coll, fmt_bytes(bytes),
              100 * (1 - busbw_gbps / med_gbps), med_gbps, groups, coll, z, calls) END AS message,
       printf('up to %s a call on this group: %s instead of %s', fmt_ns(xfer_ns - xfer_ns * busbw_gbps / med_gbps),
              fmt_ns(xfer_ns), fmt_ns(xfer_ns * busbw_gbps / med_gbps)) AS impact,
       'the group''s bus bandwidth in comm_groups back near the other groups''' AS validation,
       json_object('busbw_gbps', round(busbw_gbps, 2), 'median_gbps', round(med_gbps, 2), 'robust_z', round(z, 2),
                   'groups', groups, 'calls', calls, 'bytes', bytes, 'transfer_ns', xfer_ns, 'hosts', hosts)::VARCHAR AS evidence
FROM z
WHERE (groups >= 3 AND busbw_gbps < (1 - $min_drop) * med_gbps AND z >= $min_z)
   OR (groups = 2 AND busbw_gbps < (1 - 2 * $min_drop) * max_gbps)
ORDER BY run_id, subject
