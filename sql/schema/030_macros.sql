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

-- active_time: a sweep over interval edges that tells, per group, how long
-- each combination of classes was active. Input columns (g, s, e, w): w is a
-- class weight such as 1, 2^20 and 2^40, so that the running sum ("state")
-- counts the active intervals of each class in its own digit; output
-- (g, state, ns) gives the total time spent in each state. Overlapping
-- intervals of one class need no union first: they only raise the count.
CREATE OR REPLACE MACRO active_time(tbl) AS TABLE
WITH edges AS (
    SELECT g, s AS t, w AS d FROM query_table(tbl) WHERE e > s
    UNION ALL
    SELECT g, e AS t, -w AS d FROM query_table(tbl) WHERE e > s
), sweep AS (
    SELECT g, t,
           sum(d) OVER w AS state,
           lead(t) OVER w AS next_t
    FROM edges
    WINDOW w AS (PARTITION BY g ORDER BY t, d ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW)
)
SELECT g, state, sum(next_t - t)::BIGINT AS ns
FROM sweep
WHERE next_t > t AND state <> 0
GROUP BY g, state;

-- covered_time: per group, the time during which A is active (the length of
-- A's union) and the part of it during which B is active too.
CREATE OR REPLACE MACRO covered_time(a, b) AS TABLE
WITH both_ AS (
    SELECT g, s, e, 1::BIGINT AS w FROM query_table(a)
    UNION ALL
    SELECT g, s, e, 4294967296::BIGINT AS w FROM query_table(b)
)
SELECT g,
       coalesce(sum(ns) FILTER (WHERE state % 4294967296 > 0), 0)::BIGINT AS a_ns,
       coalesce(sum(ns) FILTER (WHERE state % 4294967296 > 0 AND state >= 4294967296), 0)::BIGINT AS covered_ns
FROM active_time(both_)
GROUP BY g
HAVING sum(ns) FILTER (WHERE state % 4294967296 > 0) > 0;

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
         WHEN abs(ns) >= 999995000 THEN printf('%.2f s', ns / 1e9)
         WHEN abs(ns) >= 999995 THEN printf('%.2f ms', ns / 1e6)
         WHEN abs(ns) >= 999.5 THEN printf('%.1f us', ns / 1e3)
         ELSE printf('%d ns', ns::BIGINT) END;

-- metric_value: one number from the metrics table (NULL when absent).
CREATE OR REPLACE MACRO metric_value(det, r, m) AS (
    SELECT max(value) FROM metrics WHERE detector = det AND metric = m AND rank IS NOT DISTINCT FROM r
);

-- Readers of gpu_class_time's state: is any activity of the class running.
CREATE OR REPLACE MACRO comp_active(state) AS state % 1048576 > 0;
CREATE OR REPLACE MACRO comm_active(state) AS (state // 1048576) % 1048576 > 0;
CREATE OR REPLACE MACRO mem_active(state) AS (state // 1099511627776) % 1024 > 0;
-- the part of a collective a rank spent waiting for its last peer
-- (gpu_class_time's WAIT class, weight 2^50)
CREATE OR REPLACE MACRO wait_active(state) AS state // 1125899906842624 > 0;

-- fmt_bytes: a byte count for people (B, KiB, MiB, GiB).
CREATE OR REPLACE MACRO fmt_bytes(n) AS
    CASE WHEN n IS NULL THEN 'n/a'
         WHEN abs(n) >= 2^30 THEN printf('%.2f GiB', n / 2^30)
         WHEN abs(n) >= 2^20 THEN printf('%.1f MiB', n / 2^20)
         WHEN abs(n) >= 2^10 THEN printf('%.1f KiB', n / 2^10)
         ELSE printf('%d B', n::BIGINT) END;

-- peak_tflops: the dense peak of a gpu_specs row for a dtype name (bf16,
-- fp16, fp8, tf32, fp32); NULL when unknown or unsupported.
CREATE OR REPLACE MACRO peak_tflops(s, dtype) AS
    nullif(CASE dtype WHEN 'bf16' THEN s.bf16_tflops WHEN 'fp16' THEN s.fp16_tflops WHEN 'fp8' THEN s.fp8_tflops
                      WHEN 'tf32' THEN s.tf32_tflops WHEN 'fp32' THEN s.fp32_tflops END, 0);

-- dtype_bytes: bytes per element of a collective's dtype as Kineto names
-- it (Float, BFloat16, Half, Double, Int, Long, Byte, Char, Bool, Float8_*)
-- or as an operator's Input type gives it (float, c10::BFloat16, long int).
CREATE OR REPLACE MACRO dtype_bytes(dtype) AS
    CASE WHEN dtype IN ('Double', 'Long', 'ComplexFloat', 'double', 'long int', 'c10::complex<float>') THEN 8
         WHEN dtype IN ('Float', 'Int', 'float', 'int') THEN 4
         WHEN dtype IN ('BFloat16', 'Half', 'Short', 'c10::BFloat16', 'c10::Half', 'short int') THEN 2
         WHEN dtype IN ('Byte', 'Char', 'Bool', 'bool', 'unsigned char', 'signed char') OR dtype LIKE '%Float8%' THEN 1 END;

-- bus_factor: NCCL's bus bandwidth over algorithm bandwidth for a
-- collective of n ranks (nccl-tests' PERFORMANCE.md): all-reduce 2(n-1)/n,
-- all-gather, reduce-scatter and all-to-all (n-1)/n, the rest 1.
CREATE OR REPLACE MACRO bus_factor(coll, n) AS
    CASE WHEN n IS NULL OR n < 2 THEN 1.0
         WHEN coll = 'allreduce' THEN 2.0 * (n - 1) / n
         WHEN coll IN ('allgather', 'reducescatter', 'alltoall', '_allgather_base', '_reduce_scatter_base', 'all_to_all', 'alltoall_base') THEN (n - 1.0) / n
         ELSE 1.0 END;

-- clock_reasons_text: the NVML clock event (throttle) reasons a bitmask
-- holds, in words ('none' for 0); see nvmlClocksEventReasons.
CREATE OR REPLACE MACRO clock_reasons_text(bits) AS
    coalesce(nullif(concat_ws(', ',
        CASE WHEN (bits::UBIGINT & 1) <> 0 THEN 'GPU idle' END,
        CASE WHEN (bits::UBIGINT & 2) <> 0 THEN 'application clocks setting' END,
        CASE WHEN (bits::UBIGINT & 4) <> 0 THEN 'SW power cap' END,
        CASE WHEN (bits::UBIGINT & 8) <> 0 THEN 'HW slowdown' END,
        CASE WHEN (bits::UBIGINT & 16) <> 0 THEN 'sync boost' END,
        CASE WHEN (bits::UBIGINT & 32) <> 0 THEN 'SW thermal slowdown' END,
        CASE WHEN (bits::UBIGINT & 64) <> 0 THEN 'HW thermal slowdown' END,
        CASE WHEN (bits::UBIGINT & 128) <> 0 THEN 'HW power brake' END,
        CASE WHEN (bits::UBIGINT & 256) <> 0 THEN 'display clock setting' END), ''), 'none');

-- xid_text: what an XID error number means, for the ones a training job
-- meets most (NVIDIA's XID catalog); 'XID n' otherwise.
CREATE OR REPLACE MACRO xid_text(x) AS
    CASE x::INTEGER
        WHEN 13 THEN 'XID 13: graphics engine exception (often an illegal memory access in a kernel)'
        WHEN 31 THEN 'XID 31: GPU memory page fault (MMU fault)'
        WHEN 43 THEN 'XID 43: GPU stopped processing (a kernel was killed)'
        WHEN 45 THEN 'XID 45: preemptive cleanup after an earlier error'
        WHEN 48 THEN 'XID 48: double-bit ECC error'
        WHEN 61 THEN 'XID 61: internal micro-controller breakpoint/warning'
        WHEN 62 THEN 'XID 62: internal micro-controller halt'
        WHEN 63 THEN 'XID 63: ECC page retirement or row remapping recorded'
        WHEN 64 THEN 'XID 64: ECC page retirement or row remapping failure'
        WHEN 74 THEN 'XID 74: NVLink error'
        WHEN 79 THEN 'XID 79: GPU has fallen off the bus'
        WHEN 92 THEN 'XID 92: high single-bit ECC error rate'
        WHEN 94 THEN 'XID 94: contained ECC error'
        WHEN 95 THEN 'XID 95: uncontained ECC error'
        WHEN 119 THEN 'XID 119: GSP RPC timeout'
        WHEN 120 THEN 'XID 120: GSP error'
        ELSE printf('XID %d', x::INTEGER) END;

-- roof_bound: what bounds a unique operator call on the roofline: latency
-- when its kernels average under latency_ns and reach under half their
-- roof, else whichever roof (compute or memory) takes longer.
CREATE OR REPLACE MACRO roof_bound(gpu_ns, kernels, ideal_ns, compute_ns, memory_ns, latency_ns) AS
    CASE WHEN gpu_ns / kernels < latency_ns AND ideal_ns < 0.5 * gpu_ns THEN 'latency'
         WHEN coalesce(compute_ns, 0) >= memory_ns THEN 'compute' ELSE 'memory' END;

-- clip: text cut to n characters, ending in '...' when cut.
CREATE OR REPLACE MACRO clip(s, n) AS
    CASE WHEN length(s) > n THEN left(s, n - 3) || '...' ELSE s END;
