-- name: mem_budget
-- category: config_memory
-- kind: finding
-- severity: info
-- description: MEM per-GPU memory budget of the training side: weights, gradients, optimizer states after TP/PP/EP/ETP/DP sharding, activations with the recompute setting, the optimizer offload; verdict fits / tight / does not fit and the fewest GPUs that could hold the model states
-- threshold: tight_fraction = 0.75  # above this fraction of GPU memory the budget is tight (colocate needs room for SGLang to switch)
-- threshold: max_fraction = 0.95  # above this it does not fit
-- fix: does not fit: more GPUs, more TP/PP/EP, full recompute or the optimizer offload; tight: keep the offload / recompute, lower --max-tokens-per-gpu
WITH m AS (
    SELECT b.*, s.tp1, s.pp1, s.cp1, s.ep1, s.etp1, s.dp1, s.hidden, s.layers, s.gpus, s.moe,
           b.total_gib / b.mem_gib AS frac,
           -- the fewest GPUs whose memory holds the model states if they
           -- were sharded evenly, after activations and overhead
           ceil(b.p_total * CASE WHEN b.optim_offload THEN 6 ELSE 18 END / 2^30
                / greatest(b.mem_gib * $max_fraction - coalesce(b.act_gib, 0) - b.overhead_gib, 1)) AS min_gpus
    FROM script_memory_budget b
    JOIN script_audit s ON s.run_id = b.run_id
    WHERE b.mem_gib > 0 AND b.total_gib IS NOT NULL
)
SELECT m.run_id, 'MEM' AS subject, 'memory_per_gpu_gib' AS metric, m.total_gib AS value, m.mem_gib * $tight_fraction AS threshold,
       CASE WHEN m.frac > $max_fraction THEN 'critical' WHEN m.frac > $tight_fraction THEN 'warn' ELSE 'info' END AS severity,
       printf('%s: about %.1f of %.0f GiB per GPU (%.0f%%). Weights %.1f + grads %.1f + optimizer %.1f%s + activations %.1f + overhead %.0f GiB. Formula: params × (2 B bf16 weight + 4 B fp32 grad) / (TP × PP, experts ETP × EP × PP) + params × 12 B Adam fp32 master+m+v / (that × DP); activations %s tokens × hidden × layers/PP × %s B / TP (+ fp32 logits); MoE dense part taken as the active params',
              CASE WHEN m.frac > $max_fraction THEN 'does not fit' WHEN m.frac > $tight_fraction THEN 'tight' ELSE 'fits' END,
              m.total_gib, m.mem_gib, 100 * m.frac, m.weights_gib, m.grads_gib, m.optim_gib,
              CASE WHEN m.optim_offload THEN printf(' (offloaded to CPU; %.1f on GPU without)', m.optim_full_gib) ELSE '' END,
              coalesce(m.act_gib, 0), m.overhead_gib,
              coalesce(m.tokens::BIGINT::VARCHAR, '?'),
              CASE WHEN m.full_recompute THEN '(2 + one layer''s 34)' ELSE '34' END) AS message,
       printf('%.1fB params on %s GPUs of %.0f GiB (%s); the model states alone need at least %d such GPUs%s.',
              m.p_total / 1e9, coalesce(m.gpus::VARCHAR, '?'), m.mem_gib, m.gpu_name, m.min_gpus::BIGINT,
              CASE WHEN m.optim_offload THEN ' with the optimizer on the CPU' ELSE '' END) AS impact,
       CASE WHEN m.frac <= $tight_fraction THEN 'nothing to change' END AS fix,
       audit_evidence(m.script, NULL, NULL, NULL, NULL, NULL, 'derived',
                      printf('Memory budget: %s (%.0f of %.0f GiB per GPU)',
                             CASE WHEN m.frac > $max_fraction THEN 'does not fit' WHEN m.frac > $tight_fraction THEN 'tight' ELSE 'fits' END, m.total_gib, m.mem_gib),
                      'the estimate ignores SGLang''s share in colocate mode and framework extras; measure with trainscope profile --memory', NULL) AS evidence
FROM m
