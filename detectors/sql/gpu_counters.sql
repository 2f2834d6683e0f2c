-- name: gpu_counters
-- category: hardware
-- kind: metric
-- description: per rank, what its GPU's hardware counters (dcgm-exporter scrapes, the agent's NVML sampler, Nsight Systems GPU metrics; view gpu_samples) read over the rank's analysed steps (a trace without steps: its span): samples, whether any fell inside the steps (else the nearest within near_s are used: dcgm-exporter samples every 30 s by default), median SM clock and its drop against the run's median, the share of samples with a slowing clock event reason (power cap, thermal or hardware slowdown) and those reasons' bits, power against its limit, peak temperature, peak framebuffer use, the last XID, new double-bit ECC errors, SM, tensor-pipe and DRAM activity, and NVLink/PCIe throughput against the catalog's link peak; the subject is the host and GPU
-- threshold: near_s = 120  # with no sample inside a rank's steps, use its GPU's samples this many seconds around them
-- threshold: slowing_reasons = 236  # the clock event reasons that slow a busy GPU (NVML bits): SW power cap 0x4, HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40, HW power brake 0x80
-- threshold: at_limit = 0.97  # power at this share of its limit counts as at the limit
WITH win AS (
    SELECT run_id, rank, lo, hi FROM analysed_span
), g AS (
    SELECT g.run_id, g.rank, g.host, g.device, g.ts, g.metric, g.value, g.ts BETWEEN w.lo AND w.hi AS inside
    FROM gpu_samples g JOIN win w ON w.run_id = g.run_id AND w.rank = g.rank
    WHERE g.ts BETWEEN w.lo - $near_s * 1e9 AND w.hi + $near_s * 1e9
), pick AS (
    SELECT * FROM g QUALIFY inside OR NOT bool_or(inside) OVER (PARTITION BY run_id, rank)
), per_ts AS (
    -- one row per sample time: the values that only mean something together
    SELECT run_id, rank, ts,
           max(value) FILTER (WHERE metric = 'power_w') AS power,
           max(value) FILTER (WHERE metric = 'fb_used_mib') AS used,
           max(value) FILTER (WHERE metric = 'fb_free_mib') AS free,
           max(value) FILTER (WHERE metric = 'fb_reserved_mib') AS reserved,
           max(value) FILTER (WHERE metric = 'nvlink_tx_bps') + coalesce(max(value) FILTER (WHERE metric = 'nvlink_rx_bps'), 0) AS nvlink,
           max(value) FILTER (WHERE metric = 'pcie_tx_bps') + coalesce(max(value) FILTER (WHERE metric = 'pcie_rx_bps'), 0) AS pcie
    FROM pick GROUP BY ALL
), r AS (
    SELECT run_id, rank, any_value(host) AS host, any_value(device) AS device,
           count(DISTINCT ts) AS samples,
           bool_or(inside)::INTEGER AS in_window,
           median(value) FILTER (WHERE metric = 'sm_clock_mhz') AS sm_clock_mhz,
           min(value) FILTER (WHERE metric = 'sm_clock_mhz') AS sm_clock_min_mhz,
           avg(((value::UBIGINT & $slowing_reasons::UBIGINT) <> 0)::INTEGER) FILTER (WHERE metric = 'clock_reasons') AS throttle_share,
           bit_or(value::UBIGINT & $slowing_reasons::UBIGINT) FILTER (WHERE metric = 'clock_reasons') AS throttle_reasons,
           max(value) FILTER (WHERE metric = 'power_limit_w') AS power_limit_w,
           max(value) FILTER (WHERE metric = 'temp_c') AS temp_max_c,
           max(value) FILTER (WHERE metric = 'xid') AS xid,
           max(value) FILTER (WHERE metric = 'ecc_dbe') - min(value) FILTER (WHERE metric = 'ecc_dbe') AS ecc_dbe_new,
           avg(value) FILTER (WHERE metric = 'sm_active') AS sm_active,
           avg(value) FILTER (WHERE metric = 'tensor_active') AS tensor_active,
           avg(value) FILTER (WHERE metric = 'dram_active') AS dram_active,
           avg(value) FILTER (WHERE metric = 'gpu_util') AS gpu_util
    FROM pick GROUP BY run_id, rank
), t AS (
    SELECT p.run_id, p.rank,
           median(p.power) AS power_w,
           avg((p.power >= $at_limit * r.power_limit_w)::INTEGER) FILTER (WHERE p.power IS NOT NULL) AS power_at_limit_share,
           max(p.used) AS fb_used_max_mib,
           max(p.used / nullif(p.used + p.free + coalesce(p.reserved, 0), 0)) AS fb_used_frac,
           avg(p.nvlink) AS nvlink_bps,
           avg(p.pcie) AS pcie_bps
    FROM per_ts p JOIN r ON r.run_id = p.run_id AND r.rank = p.rank
    GROUP BY ALL
)
SELECT r.run_id, r.rank, printf('%s gpu %s', r.host, coalesce(r.device::VARCHAR, '?')) AS subject,
       r.samples, r.in_window, r.sm_clock_mhz, r.sm_clock_min_mhz,
       median(r.sm_clock_mhz) OVER (PARTITION BY r.run_id) AS run_sm_clock_mhz,
       1 - r.sm_clock_mhz / nullif(median(r.sm_clock_mhz) OVER (PARTITION BY r.run_id), 0) AS clock_drop,
       r.throttle_share, r.throttle_reasons,
       t.power_w, r.power_limit_w, t.power_at_limit_share, r.temp_max_c,
       r.xid, r.ecc_dbe_new, t.fb_used_max_mib, t.fb_used_frac,
       r.gpu_util, r.sm_active, r.tensor_active, r.dram_active,
       t.nvlink_bps, t.pcie_bps,
       t.nvlink_bps / nullif(s.link_gbs * 1e9, 0) AS nvlink_share_of_peak
FROM r
JOIN t ON t.run_id = r.run_id AND t.rank = r.rank
LEFT JOIN ranks k ON k.run_id = r.run_id AND k.rank = r.rank
LEFT JOIN gpu_specs s ON s.gpu_name = k.gpu_name
ORDER BY r.run_id, r.rank
