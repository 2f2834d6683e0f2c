-- Node history across jobs: after every final analysis, one row per GPU
-- and per link (a process group's set of GPUs) of the run, with how it
-- fared in that run. GPUs are named by host and device index, so a GPU is
-- the same node in every job that lands on it, whatever rank it ran. A
-- rank whose host is unknown (a trace without host_name, loaded without
-- --host) has no such name and is left out, as is a link with such a rank.
-- Re-analysing a run replaces its rows (detectors.SaveNodeHistory).
CREATE TABLE IF NOT EXISTS node_history (
    run_id       VARCHAR NOT NULL,
    run_start_ns BIGINT,           -- when the run started (its ranks' earliest start): "the last N runs" counts by it
    analyzed_ns  BIGINT NOT NULL,
    entity       VARCHAR NOT NULL, -- gpu or link
    node         VARCHAR NOT NULL, -- gpu: host:device (host:rankN when the trace names no device); link: its GPUs, sorted
    host         VARCHAR,          -- a GPU's host; a link's hosts, comma-separated
    device       INTEGER,
    rank         INTEGER,          -- the rank a GPU ran in this run
    gpu_name     VARCHAR,
    late_share   DOUBLE,           -- share of its matched collectives at which it arrived last (straggler)
    slowdown     DOUBLE,           -- a GPU's kernel time against the same kernels on its peers (kernel_speed; 1.0 = as fast); a slow link's bus bandwidth drop
    throttled    BOOLEAN,          -- gpu_throttle or gpu_clock_cap named it
    gpu_error    VARCHAR,          -- gpu_xid: 'xid N', 'gpu_lost' or 'ecc_dbe_new'
    hung         BOOLEAN,          -- hang named it
    slow         BOOLEAN,          -- slow_rank, slow_host, straggler_rank or gpu_throttle named it (slow_link for a link)
    bad          BOOLEAN,          -- slow, a GPU error or a hang
    detectors    VARCHAR           -- every detector that named it, comma-separated
);

-- node_outcomes: the rows node_history gets for the runs in the database,
-- computed from ranks, the detectors' findings and metrics, and the
-- process groups the collectives ran on.
CREATE OR REPLACE VIEW node_outcomes AS
WITH rk AS (
    SELECT run_id, rank, host, device, gpu_name,
           host || ':' || coalesce(device::VARCHAR, 'rank' || rank) AS node,
           min(start_ns) OVER (PARTITION BY run_id) AS run_start_ns
    FROM ranks WHERE host <> ''
), f AS (
    SELECT run_id, detector, rank, host, subject, metric, value FROM findings
    WHERE detector IN ('slow_rank', 'slow_host', 'straggler_rank', 'gpu_throttle', 'gpu_clock_cap', 'gpu_xid', 'hang', 'slow_link')
), named AS (
    -- a finding names a GPU by its rank; slow_host by its host; gpu_clock_cap
    -- by a rank list; gpu_xid by host and device where no rank is known
    SELECT r.run_id, r.rank, f.detector, f.metric, f.value
    FROM rk r JOIN f ON f.run_id = r.run_id
    WHERE f.detector <> 'slow_link'
      AND (f.rank = r.rank
           OR (f.rank IS NULL AND f.detector = 'slow_host' AND f.subject = r.host)
           OR (f.rank IS NULL AND f.detector = 'gpu_clock_cap'
               AND list_contains(TRY_CAST(regexp_extract(f.subject, '\[[0-9, ]*\]') AS INTEGER[]), r.rank))
           OR (f.rank IS NULL AND f.detector = 'gpu_xid' AND f.subject = printf('%s gpu %s', r.host, r.device)))
), flags AS (
    SELECT run_id, rank,
           string_agg(DISTINCT detector, ',' ORDER BY detector) AS detectors,
           bool_or(detector IN ('gpu_throttle', 'gpu_clock_cap')) AS throttled,
           bool_or(detector = 'hang') AS hung,
           bool_or(detector IN ('slow_rank', 'slow_host', 'straggler_rank', 'gpu_throttle')) AS slow,
           arg_max(CASE WHEN metric = 'xid' THEN 'xid ' || value::INTEGER ELSE metric END, value) FILTER (WHERE detector = 'gpu_xid') AS gpu_error
    FROM named GROUP BY run_id, rank
), m AS (
    SELECT run_id, rank,
           max(value) FILTER (WHERE detector = 'kernel_speed' AND metric = 'slowdown') AS slowdown,
           round(max(value) FILTER (WHERE detector = 'straggler' AND metric = 'last_pct') / 100, 4) AS late_share
    FROM metrics
    WHERE detector IN ('kernel_speed', 'straggler') AND metric IN ('slowdown', 'last_pct') AND rank IS NOT NULL
    GROUP BY run_id, rank
), gpus AS (
    SELECT r.run_id, r.run_start_ns, 'gpu' AS entity, r.node, r.host, r.device, r.rank, r.gpu_name,
           m.late_share, m.slowdown,
           coalesce(fl.throttled, false) AS throttled, fl.gpu_error, coalesce(fl.hung, false) AS hung,
           coalesce(fl.slow, false) AS slow,
           coalesce(fl.slow, false) OR fl.gpu_error IS NOT NULL OR coalesce(fl.hung, false) AS bad,
           fl.detectors
    FROM rk r
    LEFT JOIN flags fl ON fl.run_id = r.run_id AND fl.rank = r.rank
    LEFT JOIN m ON m.run_id = r.run_id AND m.rank = r.rank
), grp AS (
    -- the process groups with a rank list ("[0, 1, 2, 3]") that ran collectives
    SELECT DISTINCT run_id, pg_ranks,
           list_sort(TRY_CAST(pg_ranks AS INTEGER[])) AS members
    FROM slices_detail WHERE pg_ranks IS NOT NULL
), grp_members AS (
    SELECT g.run_id, g.members, r.node, r.host
    FROM (SELECT run_id, members, unnest(members) AS member FROM grp WHERE len(members) >= 2) g
    JOIN rk r ON r.run_id = g.run_id AND r.rank = g.member
), links AS (
    SELECT run_id, members,
           string_agg(node, ',' ORDER BY node) AS node,
           string_agg(DISTINCT host, ',' ORDER BY host) AS host
    FROM grp_members GROUP BY run_id, members
    HAVING count(*) = len(any_value(members)) -- every member traced: else the link is not known whole
), slow_links AS (
    SELECT run_id, list_sort(TRY_CAST(regexp_extract(subject, '\[[0-9, ]*\]') AS INTEGER[])) AS members, max(value) AS drop
    FROM f WHERE detector = 'slow_link' GROUP BY ALL
)
SELECT run_id, run_start_ns, entity, node, host, device, rank, gpu_name, late_share, slowdown,
       throttled, gpu_error, hung, slow, bad, detectors
FROM gpus
UNION ALL
SELECT l.run_id, (SELECT min(run_start_ns) FROM rk WHERE rk.run_id = l.run_id), 'link', l.node, l.host, NULL, NULL, NULL,
       NULL, s.drop, false, NULL, false, s.drop IS NOT NULL, s.drop IS NOT NULL,
       CASE WHEN s.drop IS NOT NULL THEN 'slow_link' END
FROM links l LEFT JOIN slow_links s ON s.run_id = l.run_id AND s.members = l.members;

-- node_reputation_over(n): every GPU and link over its last n runs (by run
-- start): in how many it was slow, throttled, reported a GPU error, hung,
-- or any of those (bad); its median slowdown and late share; and a score,
-- the Wilson lower bound (95%, one-sided) of its share of bad runs. The
-- score grows with evidence: one bad run of one scores 0.27, three of
-- three 0.53, five of five 0.65, two of ten 0.07. So one bad run does not
-- condemn a node, and a node bad in most of many runs stands out.
CREATE OR REPLACE MACRO node_reputation_over(n) AS TABLE
WITH h AS (
    SELECT *, row_number() OVER (PARTITION BY entity, node ORDER BY coalesce(run_start_ns, analyzed_ns) DESC, run_id DESC) AS recent
    FROM node_history
), c AS (
    SELECT entity, node,
           arg_max(host, coalesce(run_start_ns, analyzed_ns)) AS host,
           arg_max(gpu_name, coalesce(run_start_ns, analyzed_ns)) AS gpu_name,
           count(*) AS runs,
           count(*) FILTER (WHERE bad) AS bad_runs,
           count(*) FILTER (WHERE slow) AS slow_runs,
           count(*) FILTER (WHERE throttled) AS throttled_runs,
           count(*) FILTER (WHERE gpu_error IS NOT NULL) AS error_runs,
           count(*) FILTER (WHERE hung) AS hung_runs,
           round(median(slowdown), 4) AS median_slowdown,
           round(median(late_share), 4) AS median_late_share,
           string_agg(run_id, ',' ORDER BY coalesce(run_start_ns, analyzed_ns) DESC) FILTER (WHERE bad) AS bad_run_ids,
           arg_max(run_id, coalesce(run_start_ns, analyzed_ns)) AS last_run_id,
           max(coalesce(run_start_ns, analyzed_ns)) AS last_run_ns
    FROM h WHERE recent <= n
    GROUP BY entity, node
)
SELECT entity, node, host, gpu_name, runs, bad_runs, slow_runs, throttled_runs, error_runs, hung_runs,
       median_slowdown, median_late_share,
       -- z = 1.6449, z^2 = 2.7057
       round((bad_runs / runs + 2.7057 / (2 * runs)
              - 1.6449 * sqrt(bad_runs / runs * (1 - bad_runs / runs) / runs + 2.7057 / (4 * runs * runs)))
             / (1 + 2.7057 / runs), 4) AS score,
       bad_run_ids, last_run_id, last_run_ns
FROM c;

-- node_reputation: every GPU and link over its last 10 runs, worst first.
CREATE OR REPLACE VIEW node_reputation AS
SELECT * FROM node_reputation_over(10) ORDER BY score DESC, bad_runs DESC, entity, node;
