-- name: straggler_rank
-- category: communication
-- kind: finding
-- severity: warn
-- description: a rank that arrives last at most collectives it shares with peers, making them wait a noticeable share of the GPU span
-- threshold: min_last_ratio = 0.60  # collectives where the rank was last / collectives it took part in
-- threshold: min_instances = 5  # ignore ranks seen in fewer matched collectives
-- threshold: min_wait_ratio = 0.01  # peers' total wait / the run's longest GPU span
-- fix: find what delays this rank before its collectives: compare its compute kernels and host time with peers (thermal or power throttling, a slower GPU or link, uneven data or sequence lengths, a noisy neighbour on its host)
-- shows: any, slow_host
-- symptom: idle
WITH s AS (
    SELECT run_id, rank,
           max(instances) AS instances, max(times_last) AS times_last, max(last_pct) AS last_pct,
           max(wait_caused_ns) AS wait_ns, max(mean_lateness_ns) AS lateness_ns, max(block_ns) AS block_ns
    FROM metric_straggler
    GROUP BY run_id, rank
), span AS (
    SELECT run_id, max(span_ns) AS span_ns FROM gpu_span GROUP BY run_id
), top AS (
    SELECT run_id, last_rank AS rank, string_agg(collective || ' x' || n, ', ' ORDER BY n DESC) AS colls
    FROM (SELECT run_id, last_rank, collective, count(*) AS n FROM collective_waits GROUP BY run_id, last_rank, collective
          QUALIFY row_number() OVER (PARTITION BY run_id, last_rank ORDER BY count(*) DESC, collective) <= 3)
    GROUP BY run_id, last_rank
)
SELECT s.run_id, s.rank,
       'last_arrival_ratio' AS metric,
       s.last_pct / 100 AS value,
       $min_last_ratio AS threshold,
       -- peers' waits add up over the peers; what the job lost is how much
       -- later each collective began than the second-last arrival (block_ns)
       printf('rank %d arrived last at %d of %d collectives (%.0f%%), on average %s after the first member; that held the job up %s (%.1f%% of the GPU span, counting each collective from the second-last arrival)%s',
              s.rank, s.times_last::BIGINT, s.instances::BIGINT, s.last_pct, fmt_ns(s.lateness_ns), fmt_ns(s.block_ns),
              100 * s.block_ns / sp.span_ns,
              CASE WHEN s.wait_ns > 1.05 * s.block_ns
                   THEN printf('; its peers waited %s for it, summed over them', fmt_ns(s.wait_ns)) ELSE '' END) AS message,
       printf('up to %s of waiting removed from its peers', fmt_ns(s.wait_ns)) AS impact,
       'hypothesis' AS confidence,
       printf('what delays rank %d: its own trace compared with a peer''s (trainscope analyze on both), or GPU clocks and throttling from DCGM for its host', s.rank) AS needs,
       json_object('times_last', s.times_last, 'instances', s.instances, 'wait_caused_ns', s.wait_ns,
                   'mean_lateness_ns', round(s.lateness_ns), 'block_ns', s.block_ns, 'collectives', t.colls)::VARCHAR AS evidence
FROM s
JOIN span sp ON sp.run_id = s.run_id
LEFT JOIN top t ON t.run_id = s.run_id AND t.rank = s.rank
WHERE s.instances >= $min_instances
  AND s.last_pct / 100 >= $min_last_ratio
  AND s.wait_ns >= $min_wait_ratio * sp.span_ns
ORDER BY s.run_id, s.wait_ns DESC
