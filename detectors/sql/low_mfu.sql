-- name: low_mfu
-- category: utilization
-- kind: finding
-- severity: warn
-- description: model FLOPs utilisation below the threshold, with where the loss is: in the matmul and attention kernels themselves (they run far from peak) or around them (the GPU spends most of the span on other work or idle)
-- threshold: min_mfu = 0.30  # MFU below this (0.30 = 30% of dense peak) is reported
-- threshold: min_tflop = 1  # ignore ranks whose window holds fewer TFLOP than this
-- fix: if the matmul kernels themselves run far below peak, grow them (larger micro-batch or sequence, fused QKV/MLP projections, bf16/fp8 instead of fp32, dimensions that are multiples of 64/128); if they run near peak but take a small share of the span, remove what surrounds them: exposed communication, host-launch gaps (CUDA graphs, torch.compile), memory-bound elementwise kernels (fusion)
-- symptom: idle
WITH m AS (
    SELECT run_id, rank,
           max(mfu_pct) AS mfu, max(tflop) AS tflop, max(achieved_tflops) AS tflops,
           max(matmul_time_pct) AS mm_time, max(matmul_pct_of_peak) AS mm_peak, max(matmul_tflops) AS mm_tflops
    FROM metric_mfu
    GROUP BY run_id, rank
)
SELECT m.run_id, m.rank,
       CASE WHEN m.mm_peak IS NULL THEN 'matmul kernels not linked'
            WHEN m.mm_peak < 50 THEN 'in the matmul kernels' ELSE 'around the matmul kernels' END AS subject,
       'mfu' AS metric,
       m.mfu / 100 AS value,
       $min_mfu AS threshold,
       printf('rank %d reached %.1f%% MFU (%.1f TFLOP/s on %s, counting the %.2f TFLOP of matmul, attention and convolution operators in the window); %s',
              m.rank, m.mfu, m.tflops, coalesce(g.catalog_key, r.gpu_name),
              m.tflop,
              CASE WHEN m.mm_peak IS NULL
                   THEN 'no kernel in the trace carries the External id of one of those operators (older profilers number them apart), so which kernels they launched, and whether the loss is in them or around them, is not known'
                   WHEN m.mm_peak < 50
                   THEN printf('those kernels themselves ran at %.0f%% of peak (%.1f TFLOP/s) while they ran, so the loss is in them', m.mm_peak, m.mm_tflops)
                   ELSE printf('those kernels ran at %.0f%% of peak but took only %.0f%% of the GPU span, so the loss is the rest of the span', m.mm_peak, m.mm_time) END) AS message,
       printf('each point of MFU is %.1f TFLOP/s on this GPU', m.tflops / nullif(m.mfu, 0)) AS impact,
       'mfu_pct of the mfu metric, over the same steps' AS validation,
       'measured' AS confidence,
       json_object('mfu_pct', m.mfu, 'tflop', m.tflop, 'achieved_tflops', m.tflops, 'matmul_time_pct', m.mm_time,
                   'matmul_pct_of_peak', m.mm_peak, 'gpu', g.catalog_key)::VARCHAR AS evidence
FROM m
JOIN ranks r ON r.run_id = m.run_id AND r.rank = m.rank
LEFT JOIN gpu_specs g ON g.gpu_name = r.gpu_name
WHERE m.tflop >= $min_tflop AND m.mfu / 100 < $min_mfu
ORDER BY m.run_id, m.rank
