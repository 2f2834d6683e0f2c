-- name: hang
-- category: reliability
-- kind: finding
-- severity: critical
-- description: a rank that stopped making progress while its peers went on: it entered fewer collectives on a communicator than its peers, or reached an earlier step, and its peers kept working (or waiting in a collective) long after its last activity. Looks at the whole trace, not only the analysis window: a hang is usually in the last step
-- threshold: min_stall_ns = 1000000000  # peers' last activity minus this rank's last activity
-- fix: look at what the rank was doing when it stopped (its last host ops and kernels, py-spy or a stack dump of the process); a rank missing from a collective points at a code path that skips it (a condition on rank or data, an exception swallowed on that rank), a dead GPU (check XID errors in DCGM) or a hung data loader; set TORCH_NCCL_ASYNC_ERROR_HANDLING and a NCCL timeout so that a hang fails fast
-- cause: hang
WITH comm AS (
    -- every collective kernel, numbered per rank and communicator in time order
    SELECT run_id, rank, step, coalesce(coll_name, name) AS coll, ts, ts + dur AS end_ts, dur,
           coalesce(pg_ranks, pg_name, 'stream ' || stream) AS comm,
           row_number() OVER (PARTITION BY run_id, rank, coalesce(pg_ranks, pg_name, 'stream ' || stream) ORDER BY ts, dur) AS seq
    FROM slices_detail -- collective kernels are GPU rows: detail rows, as gpu_window reads them
    WHERE kind = 'comm'
), entered AS (
    SELECT run_id, comm, rank, max(seq) AS n FROM comm GROUP BY run_id, comm, rank
), most AS (
    SELECT run_id, comm, max(n) AS n, count(*) AS ranks FROM entered GROUP BY run_id, comm
), missed AS (
    -- per rank, the first collective it did not enter on a communicator its peers went further on
    SELECT e.run_id, e.rank, e.comm, e.n AS entered, m.n AS peers_entered,
           arg_min(c.coll, c.rank) AS coll, arg_min(c.step, c.rank) AS coll_step,
           string_agg(DISTINCT c.rank::VARCHAR, ',' ORDER BY c.rank::VARCHAR) AS entered_by,
           max(c.dur) AS peers_wait_ns
    FROM entered e
    JOIN most m ON m.run_id = e.run_id AND m.comm = e.comm
    JOIN comm c ON c.run_id = e.run_id AND c.comm = e.comm AND c.seq = e.n + 1
    WHERE e.n < m.n AND m.ranks >= 2
    GROUP BY e.run_id, e.rank, e.comm, e.n, m.n
), first_missed AS (
    SELECT * FROM missed
    QUALIFY row_number() OVER (PARTITION BY run_id, rank ORDER BY peers_entered - entered DESC, comm) = 1
), last AS (
    SELECT s.run_id, s.rank, max(s.ts + s.dur) AS last_end_ns,
           (SELECT max(step) FROM steps st WHERE st.run_id = s.run_id AND st.rank = s.rank) AS last_step
    FROM slices s
    GROUP BY s.run_id, s.rank
), peers AS (
    SELECT l.run_id, l.rank,
           (SELECT max(p.last_end_ns) FROM last p WHERE p.run_id = l.run_id AND p.rank <> l.rank) AS peers_end_ns,
           (SELECT max(p.last_step) FROM last p WHERE p.run_id = l.run_id AND p.rank <> l.rank) AS peers_step
    FROM last l
), h AS (
    SELECT l.run_id, l.rank, l.last_end_ns, l.last_step, p.peers_end_ns, p.peers_step,
           p.peers_end_ns - l.last_end_ns AS stall_ns, f.comm, f.coll, f.coll_step, f.entered, f.peers_entered,
           f.entered_by, f.peers_wait_ns
    FROM last l
    JOIN peers p ON p.run_id = l.run_id AND p.rank = l.rank
    LEFT JOIN first_missed f ON f.run_id = l.run_id AND f.rank = l.rank
    WHERE p.peers_end_ns IS NOT NULL
      AND (f.rank IS NOT NULL OR l.last_step < p.peers_step)
)
SELECT run_id, rank,
       coalesce(coll_step, last_step) AS step_lo,
       coalesce(coll, 'step ' || (last_step + 1)) AS subject,
       'stall_ns' AS metric,
       stall_ns AS value,
       $min_stall_ns AS threshold,
       CASE WHEN comm IS NOT NULL THEN
           printf('rank %d stopped: it entered %d collective(s) on communicator %s while its peers entered %d; it never entered #%d (%s%s), which ranks %s did%s. Its last activity ended %s before its peers'' (its last step %s, theirs %s)',
                  rank, entered, comm, peers_entered, entered + 1, coll,
                  CASE WHEN coll_step IS NOT NULL THEN ' in step ' || coll_step ELSE '' END,
                  entered_by,
                  CASE WHEN peers_wait_ns >= $min_stall_ns THEN ', and waited up to ' || fmt_ns(peers_wait_ns) || ' in it' ELSE '' END,
                  fmt_ns(stall_ns), coalesce(last_step::VARCHAR, 'none'), coalesce(peers_step::VARCHAR, 'none'))
       ELSE
           printf('rank %d stopped making progress: its last step is %s while its peers reached step %s; its last activity ended %s before theirs',
                  rank, coalesce(last_step::VARCHAR, 'none'), peers_step::VARCHAR, fmt_ns(stall_ns))
       END AS message,
       'a hung job wastes every GPU of the run until the NCCL timeout; failing fast frees them' AS impact,
       'the run advances steps on every rank, or fails with the hung rank''s stack instead of a timeout' AS validation,
       'measured' AS confidence,
       json_object('last_end_ns', last_end_ns, 'peers_end_ns', peers_end_ns, 'last_step', last_step, 'peers_step', peers_step,
                   'communicator', comm, 'collective', coll, 'collectives_entered', entered, 'peers_entered', peers_entered,
                   'entered_by', entered_by, 'peers_wait_ns', peers_wait_ns)::VARCHAR AS evidence
FROM h
WHERE stall_ns >= $min_stall_ns
ORDER BY run_id, rank
