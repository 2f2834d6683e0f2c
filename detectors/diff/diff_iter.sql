-- Markers of an iteration for runs without ProfilerSteps: per run, host
-- ranges (NVTX, record_function) and compute kernels that occur at least three times on every
-- rank, at least three quarters of them a steady interval (within 25% of
-- the median) after the one before. period is the median interval (to
-- find the iteration: the longest steady one), spread the mean distance
-- of an interval from it (the steadiest marker of the longest period cuts
-- best), mean_period the mean (an
-- iteration's average cost, a one-off stall included). $runs is replaced
-- by a list of run literals.
WITH ev AS (
    SELECT run_id, rank, 'range' AS src, name, ts FROM host_window
    WHERE run_id IN ($runs) AND kind = 'annotation'
    UNION ALL
    SELECT run_id, rank, 'kernel' AS src, name, ts FROM gpu_window
    WHERE run_id IN ($runs) AND class = 'COMP'
), iv AS (
    SELECT run_id, rank, src, name,
           ts - lag(ts) OVER (PARTITION BY run_id, rank, src, name ORDER BY ts) AS iv
    FROM ev
), med AS (
    SELECT run_id, rank, src, name, count(iv) AS gaps, median(iv) AS period, avg(iv) AS mean_period
    FROM iv WHERE iv IS NOT NULL
    GROUP BY run_id, rank, src, name
    HAVING count(iv) >= 2 AND median(iv) > 0
), reg AS (
    SELECT m.run_id, m.rank, m.src, m.name, m.gaps, m.period, m.mean_period,
           avg(CASE WHEN i.iv BETWEEN 0.75 * m.period AND 1.25 * m.period THEN 1.0 ELSE 0.0 END) AS steady,
           avg(abs(i.iv - m.period)) / m.period AS spread
    FROM med m
    JOIN iv i ON i.run_id = m.run_id AND i.rank = m.rank AND i.src = m.src AND i.name = m.name
    WHERE i.iv IS NOT NULL
    GROUP BY m.run_id, m.rank, m.src, m.name, m.gaps, m.period, m.mean_period
), nr AS (
    SELECT run_id, count(DISTINCT rank) AS ranks FROM gpu_window WHERE run_id IN ($runs) GROUP BY run_id
)
SELECT r.run_id, r.src, r.name, median(r.period)::DOUBLE AS period, avg(r.mean_period)::DOUBLE AS mean_period,
       max(r.spread)::DOUBLE AS spread, (min(r.gaps) + 1)::INTEGER AS min_count
FROM reg r JOIN nr ON nr.run_id = r.run_id
WHERE r.steady >= 0.75
GROUP BY r.run_id, r.src, r.name, nr.ranks
HAVING count(*) = nr.ranks
ORDER BY r.run_id, period DESC, r.src, r.name
