-- name: slow_host
-- category: compute
-- kind: finding
-- severity: critical
-- description: a host whose ranks run their compute kernels jointly slower than the ranks of the other hosts: every rank of the host is slower than three quarters of the ranks elsewhere (so a slow rank on another host, or a second slow host, does not hide it) and at least min_slowdown / 2 slower than their median (so one slow rank does not make its host slow), by more than min_slowdown on average; names the host, its ranks, the kernels and the first step where it shows
-- threshold: min_slowdown = 0.10  # the host's ranks against the other hosts' ranks (0.10 = 10%)
-- threshold: min_hosts = 2  # hosts needed to compare
-- fix: a whole node is slow: check its GPUs' clocks, power caps and temperatures (DCGM), its CPU frequency governor and NUMA placement, other jobs on the node, and its NICs if collectives are slow too; drain the node and rerun to confirm
-- cause: slow_host
WITH s AS (
    SELECT m.run_id, m.rank, r.host, max(m.slowdown) AS slowdown, max(m.extra_ns) AS extra_ns
    FROM metric_kernel_speed m JOIN ranks r ON r.run_id = m.run_id AND r.rank = m.rank
    WHERE r.host <> ''
    GROUP BY m.run_id, m.rank, r.host
), h AS (
    SELECT run_id, host, count(*) AS ranks, avg(slowdown) AS slowdown, min(slowdown) AS min_s, sum(extra_ns) AS extra_ns,
           string_agg(rank::VARCHAR, ',' ORDER BY rank) AS rank_list
    FROM s GROUP BY run_id, host
), others AS (
    SELECT a.run_id, a.host, max(b.slowdown) AS max_other, quantile_cont(b.slowdown, 0.75) AS p75_other,
           median(b.slowdown) AS med_other, count(DISTINCT b.host) AS other_hosts
    FROM h a JOIN s b ON b.run_id = a.run_id AND b.host <> a.host
    GROUP BY a.run_id, a.host
), per_step AS (
    -- per step: the host's median compute time against the other hosts'
    SELECT g.run_id, g.step, r.host, sum(g.dur) / count(DISTINCT g.rank) AS comp_per_rank
    FROM gpu_window g JOIN ranks r ON r.run_id = g.run_id AND r.rank = g.rank
    WHERE g.class = 'COMP' AND g.step IS NOT NULL
    GROUP BY g.run_id, g.step, r.host
), since AS (
    SELECT a.run_id, a.host, min(a.step) AS first_step
    FROM per_step a JOIN per_step b ON b.run_id = a.run_id AND b.step = a.step AND b.host <> a.host
    GROUP BY a.run_id, a.host, a.step
    HAVING min(a.comp_per_rank) >= (1 + $min_slowdown) * max(b.comp_per_rank)
)
SELECT h.run_id, h.host,
       (SELECT min(first_step) FROM since x WHERE x.run_id = h.run_id AND x.host = h.host) AS step_lo,
       h.host AS subject,
       'host_slowdown' AS metric,
       h.slowdown / o.med_other - 1 AS value,
       $min_slowdown AS threshold,
       printf('host %s is slow: its %d rank(s) (%s) run compute kernels %.0f%% slower than the ranks of %d other host(s), %s more GPU time in the window%s',
              h.host, h.ranks, h.rank_list, 100 * (h.slowdown / o.med_other - 1), o.other_hosts, fmt_ns(h.extra_ns),
              coalesce(', from step ' || (SELECT min(first_step) FROM since x WHERE x.run_id = h.run_id AND x.host = h.host), '')) AS message,
       printf('every collective waits for host %s: up to %s per window on each of its ranks, and that much waiting on all others', h.host, fmt_ns(h.extra_ns / h.ranks)) AS impact,
       'kernel_speed slowdown of the host''s ranks back near 1.00, and straggler wait down' AS validation,
       'measured' AS confidence,
       json_object('ranks', h.rank_list, 'slowdown', h.slowdown, 'others_slowdown', o.med_other, 'slowest_other', o.max_other,
                   'extra_ns', h.extra_ns)::VARCHAR AS evidence
FROM h JOIN others o ON o.run_id = h.run_id AND o.host = h.host
WHERE o.other_hosts + 1 >= $min_hosts
  AND h.min_s > o.p75_other
  AND h.min_s >= (1 + $min_slowdown / 2) * o.med_other
  AND h.slowdown / o.med_other - 1 >= $min_slowdown
ORDER BY h.run_id, h.slowdown DESC
