-- Reusable macros. Table macros take the name of a table, view or CTE with
-- columns (g, s, e): a group key of any type (use a STRUCT for several
-- columns), and a half-open interval [s, e) in nanoseconds.

-- interval_union: the union of each group's intervals as disjoint islands.
-- Touching intervals (s = previous e) merge, as in HTA's merge_kernel_intervals.
CREATE OR REPLACE MACRO interval_union(tbl) AS TABLE
WITH ordered AS (
    SELECT g, s, e,
           max(e) OVER (PARTITION BY g ORDER BY s, e ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM query_table(tbl)
    WHERE e >= s
), islands AS (
    SELECT g, s, e,
           sum(CASE WHEN reach IS NULL OR s > reach THEN 1 ELSE 0 END)
               OVER (PARTITION BY g ORDER BY s, e ROWS UNBOUNDED PRECEDING) AS island
    FROM ordered
)
SELECT g, min(s) AS s, max(e) AS e FROM islands GROUP BY g, island;

-- covered_time: per group, the time of A's union and the part of it that B's
-- union covers, by a sweep over both unions' edges (no range join).
CREATE OR REPLACE MACRO covered_time(a, b) AS TABLE
WITH ua AS (SELECT * FROM interval_union(a)),
     ub AS (SELECT * FROM interval_union(b)),
     edges AS (
         SELECT g, s AS t, 1 AS d FROM ua UNION ALL SELECT g, e, -1 FROM ua
         UNION ALL SELECT g, s, 2 FROM ub UNION ALL SELECT g, e, -2 FROM ub
     ),
     sweep AS (
         SELECT g, t,
                sum(d) OVER w AS state,
                lead(t) OVER w AS next_t
         FROM edges
         WINDOW w AS (PARTITION BY g ORDER BY t, d ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
     ),
     busy AS (SELECT g, sum(e - s) AS a_ns FROM ua GROUP BY g),
     both_ AS (SELECT g, sum(CASE WHEN state = 3 THEN next_t - t ELSE 0 END) AS covered_ns FROM sweep GROUP BY g)
SELECT busy.g, busy.a_ns, coalesce(both_.covered_ns, 0)::BIGINT AS covered_ns
FROM busy LEFT JOIN both_ ON both_.g IS NOT DISTINCT FROM busy.g;

-- exposed_time: time of A not covered by B (e.g. communication not hidden
-- behind compute), with A's union time and the covered part.
CREATE OR REPLACE MACRO exposed_time(a, b) AS TABLE
SELECT g, a_ns, covered_ns, a_ns - covered_ns AS exposed_ns FROM covered_time(a, b);

-- robust_z: the robust z-score of x given the median and the median
-- absolute deviation of its peers (0.6745 makes it comparable to a normal
-- z-score); 0 when the peers do not vary.
CREATE OR REPLACE MACRO robust_z(x, med, mad) AS
    CASE WHEN mad IS NULL OR mad = 0 THEN 0.0 ELSE 0.6745 * (x - med) / mad END;

-- pct: a share in percent, NULL-safe and 0 for an empty whole.
CREATE OR REPLACE MACRO pct(part, whole) AS
    CASE WHEN whole IS NULL OR whole = 0 THEN 0.0 ELSE 100.0 * part / whole END;

-- fmt_ns: a duration in nanoseconds for people (ns, us, ms, s).
CREATE OR REPLACE MACRO fmt_ns(ns) AS
    CASE WHEN ns IS NULL THEN 'n/a'
         WHEN abs(ns) >= 1e9 THEN printf('%.2f s', ns / 1e9)
         WHEN abs(ns) >= 1e6 THEN printf('%.2f ms', ns / 1e6)
         WHEN abs(ns) >= 1e3 THEN printf('%.1f us', ns / 1e3)
         ELSE printf('%d ns', ns::BIGINT) END;

-- metric_value: one number from the metrics table (NULL when absent).
CREATE OR REPLACE MACRO metric_value(det, r, m) AS (
    SELECT max(value) FROM metrics WHERE detector = det AND metric = m AND rank IS NOT DISTINCT FROM r
);
