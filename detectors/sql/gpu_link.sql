-- name: gpu_link
-- category: hardware
-- kind: finding
-- severity: warn
-- description: GPUs with NVLink (the catalog gives their GPU a link peak) whose NVLink counters read under idle_share of that peak during the analysed steps while PCIe carries more than min_pcie_gbs and more than NVLink, on a host where the run has other ranks to talk to, and whose collectives spend min_transfer of the window transferring (not waiting): NCCL sends the traffic between the host's GPUs over PCIe or host memory instead of NVLink (peer-to-peer disabled, a link down, a container that cannot see the other GPUs), at a fraction of the link's bandwidth. One finding per host, naming its GPUs; needs NVLink and PCIe throughput counters (dcgm-exporter's DCGM_FI_PROF_NVLINK_*/PCIE_* fields or the agent's NVML sampler)
-- threshold: idle_share = 0.01  # NVLink throughput under this share of the catalog's link peak counts as unused
-- threshold: min_pcie_gbs = 1.0  # PCIe throughput (TX + RX, GB/s) that shows the traffic went there
-- threshold: min_transfer = 0.05  # the ranks' collectives transfer for this share of the analysed window
-- fix: find why NCCL does not use NVLink between these GPUs: NCCL_DEBUG=INFO prints each channel's path (via P2P/IPC or NVLS is NVLink; via SHM or NET is not); check NCCL_P2P_DISABLE, NCCL_P2P_LEVEL and NCCL_SHM settings in the launch environment, that the container sees every GPU of the node (CUDA_VISIBLE_DEVICES, --gpus, IPC namespace), and nvidia-smi nvlink --status and nvidia-smi topo -m for links that are down; with P2P over NVLink the same collectives run at several times the bandwidth
-- cause: pcie_path
WITH win AS (
    SELECT run_id, rank, host, hi - lo AS span_ns, count(*) OVER (PARTITION BY run_id, host) AS host_ranks
    FROM analysed_span
), xfer AS (
    SELECT run_id, rank, sum(transfer_ns) AS transfer_ns FROM collective_instances GROUP BY ALL
), x AS (
    SELECT c.run_id, c.rank, c.subject, w.host, c.in_window,
           c.nvlink_bps, c.pcie_bps, c.nvlink_share_of_peak, s.link_gbs,
           x.transfer_ns / nullif(w.span_ns, 0) AS transfer_share
    FROM metric_gpu_counters c
    JOIN win w ON w.run_id = c.run_id AND w.rank = c.rank
    JOIN xfer x ON x.run_id = c.run_id AND x.rank = c.rank
    JOIN ranks k ON k.run_id = c.run_id AND k.rank = c.rank
    JOIN gpu_specs s ON s.gpu_name = k.gpu_name
    WHERE s.link_gbs > 0 AND w.host_ranks >= 2
      AND c.nvlink_bps IS NOT NULL AND c.pcie_bps IS NOT NULL
      AND c.nvlink_bps < $idle_share * s.link_gbs * 1e9
      AND c.pcie_bps >= $min_pcie_gbs * 1e9 AND c.pcie_bps > c.nvlink_bps
      AND x.transfer_ns >= $min_transfer * w.span_ns
)
SELECT run_id,
       CASE WHEN count(*) = 1 THEN min(rank) END AS rank,
       host,
       CASE WHEN count(*) = 1 THEN any_value(subject) ELSE printf('%s ranks %s', host, list_sort(list(rank))) END AS subject,
       'nvlink_share_of_peak' AS metric,
       max(coalesce(nvlink_share_of_peak, 0)) AS value,
       $idle_share AS threshold,
       printf('%s: the collective traffic of rank%s %s goes over PCIe, not NVLink: NVLink %.2f GB/s against a %.0f GB/s link (%.1f%%), PCIe %.1f GB/s, while the collectives transfer %.0f%% of the steps',
              host, CASE WHEN count(*) = 1 THEN '' ELSE 's' END,
              CASE WHEN count(*) = 1 THEN min(rank)::VARCHAR ELSE array_to_string(list_sort(list(rank)), ', ') END,
              avg(nvlink_bps) / 1e9, any_value(link_gbs), 100 * avg(nvlink_bps) / (any_value(link_gbs) * 1e9),
              avg(pcie_bps) / 1e9, 100 * avg(transfer_share)) AS message,
       printf('collective transfer time of %.0f%% of the steps on these ranks, at a PCIe path''s bandwidth instead of NVLink''s', 100 * avg(transfer_share)) AS impact,
       'gpu_counters nvlink_share_of_peak above the threshold while the collectives run, or NCCL_DEBUG=INFO showing P2P/IPC channels' AS validation,
       CASE WHEN min(in_window) = 1 THEN 'measured' ELSE 'inferred' END AS confidence,
       json_object('ranks', list_sort(list(rank)), 'nvlink_gbs', avg(nvlink_bps) / 1e9, 'pcie_gbs', avg(pcie_bps) / 1e9,
                   'link_peak_gbs', any_value(link_gbs), 'transfer_share', avg(transfer_share))::VARCHAR AS evidence
FROM x
GROUP BY run_id, host
ORDER BY run_id, host
