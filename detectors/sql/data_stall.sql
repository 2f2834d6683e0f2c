-- name: data_stall
-- category: input
-- kind: finding
-- severity: warn
-- description: a rank whose host waits far longer than usual before it launches the first GPU work of a step (the data loader or other host work before the forward pass stalled, and every peer waits for this rank at the step's first collective): per step, the time from the ProfilerStep's start to the first runtime call that launched GPU work (a kernel, copy or memset), against the median of that time over the run's ranks and steps; names the longest host operator in the stall. Every complete step is searched (the step-time account's complete steps: the first and a last one not cut short too), not only the analysis window's
-- threshold: min_stall_ns = 10000000  # the step's lead time exceeds the run's median lead by this much (10 ms)
-- threshold: min_step_share = 0.20  # and by this share of the run's median step time
-- fix: make the input pipeline keep ahead of the GPU: more DataLoader workers (num_workers), persistent_workers=True, prefetch_factor, pin_memory=True; move decoding and augmentation off the training process or onto the GPU; check the storage or network the data comes from on this rank's host, and whether this rank's shard holds larger samples
-- shows: data_loader, host, input
WITH complete AS (
    -- a one-off stall is looked for in every complete step, the window's
    -- or not; without an account, in the window's
    SELECT DISTINCT run_id, rank, step FROM step_account WHERE complete AND step IS NOT NULL
    UNION
    -- (the ranks without an account first: a join with none of them skips
    -- the scan of the GPU rows that NOT EXISTS made)
    SELECT DISTINCT g.run_id, g.rank, g.step FROM gpu_window g
    JOIN (SELECT run_id, rank FROM analysis_window EXCEPT SELECT run_id, rank FROM step_account) n
      ON n.run_id = g.run_id AND n.rank = g.rank
), lead AS (
    -- the first launch of each step: GPU work belongs to the step of the
    -- runtime call that launched it, and carries that call's start
    SELECT g.run_id, g.rank, g.step, s.start_ns, s.end_ns - s.start_ns AS step_ns, min(g.launch_ts) - s.start_ns AS lead_ns
    FROM slices_detail g
    JOIN complete c ON c.run_id = g.run_id AND c.rank = g.rank AND c.step = g.step
    JOIN steps s ON s.run_id = g.run_id AND s.rank = g.rank AND s.step = g.step
    WHERE g.kind IN ('kernel', 'comm', 'memcpy', 'memset') AND g.launch_ts IS NOT NULL
    GROUP BY g.run_id, g.rank, g.step, s.start_ns, s.end_ns
), base AS (
    SELECT run_id, median(lead_ns) AS med_lead_ns, median(step_ns) AS med_step_ns, count(DISTINCT rank) AS ranks
    FROM lead GROUP BY run_id
), stalled AS (
    SELECT l.*, l.lead_ns - b.med_lead_ns AS excess_ns, b.med_lead_ns, b.med_step_ns
    FROM lead l JOIN base b ON b.run_id = l.run_id
    WHERE l.lead_ns - b.med_lead_ns >= $min_stall_ns
      AND l.lead_ns - b.med_lead_ns >= $min_step_share * b.med_step_ns
), culprit AS (
    -- the longest host operator inside each stall (the loader's __next__, a
    -- collate function, a file read), ProfilerStep ranges left out. The
    -- stalls come as one list unnested: its estimate (one row) makes them
    -- the join's build side, so no stall skips the scan of the host slices
    -- and a few read only their steps; stalled itself is estimated at
    -- millions of rows, and DuckDB hashed every host slice instead (syn8:
    -- data_stall 196 -> 83 ms of CPU)
    SELECT x.run_id, x.rank, x.step, arg_max(h.name, (h.dur, h.name)) AS op, max(h.dur) AS op_ns
    FROM (SELECT unnest(s, recursive := true)
          FROM (SELECT list({'run_id': run_id, 'rank': rank, 'step': step, 'start_ns': start_ns, 'lead_ns': lead_ns}) AS s FROM stalled)) x
    JOIN slices h ON h.run_id = x.run_id AND h.rank = x.rank AND h.step = x.step
    WHERE h.kind IN ('cpu_op', 'python', 'annotation') AND h.name NOT LIKE 'ProfilerStep#%'
      AND h.ts >= x.start_ns AND h.ts < x.start_ns + x.lead_ns
    GROUP BY x.run_id, x.rank, x.step
), per_rank AS (
    SELECT x.run_id, x.rank, count(*) AS steps, min(x.step) AS step_lo, max(x.step) AS step_hi, sum(x.excess_ns) AS excess_ns,
           arg_max(x.step, (x.excess_ns, -x.step)) AS worst_step, max(x.lead_ns) AS worst_lead_ns,
           arg_max(c.op, (x.excess_ns, -x.step)) AS op, arg_max(c.op_ns, (x.excess_ns, -x.step)) AS op_ns,
           any_value(x.med_lead_ns) AS med_lead_ns, any_value(x.med_step_ns) AS med_step_ns
    FROM stalled x LEFT JOIN culprit c ON c.run_id = x.run_id AND c.rank = x.rank AND c.step = x.step
    GROUP BY x.run_id, x.rank
)
SELECT p.run_id, p.rank, r.host, p.step_lo, p.step_hi,
       'data_stall_ns' AS metric,
       p.excess_ns AS value,
       $min_stall_ns AS threshold,
       printf('rank %d waited %s before its first GPU launch in step %d (the run''s median is %s, a median step %s)%s; %d stalled step(s), %s in total',
              p.rank, fmt_ns(p.worst_lead_ns), p.worst_step, fmt_ns(p.med_lead_ns), fmt_ns(p.med_step_ns),
              CASE WHEN p.op IS NOT NULL THEN printf('; the longest host operator in the wait is %s (%s)', left(p.op, 80), fmt_ns(p.op_ns)) ELSE '' END,
              p.steps, fmt_ns(p.excess_ns)) AS message,
       printf('up to %s of step time on rank %d, and as much waiting on every peer at the next collective', fmt_ns(p.excess_ns), p.rank) AS impact,
       'the lead time before the first launch of each step back near the run''s median' AS validation,
       'measured' AS confidence,
       json_object('stalled_steps', p.steps, 'excess_ns', p.excess_ns, 'worst_step', p.worst_step, 'worst_lead_ns', p.worst_lead_ns,
                   'median_lead_ns', p.med_lead_ns, 'median_step_ns', p.med_step_ns, 'op', p.op, 'op_ns', p.op_ns)::VARCHAR AS evidence
FROM per_rank p
JOIN ranks r ON r.run_id = p.run_id AND r.rank = p.rank
ORDER BY p.run_id, p.rank
