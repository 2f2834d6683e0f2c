-- name: r_m02
-- category: config_memory
-- kind: finding
-- severity: info
-- description: R-M02 full recompute of every layer (granularity full, method uniform, 1 layer) while activations without recompute would take little of the GPU
-- threshold: max_activation_fraction = 0.40  # activations without recompute below this fraction of GPU memory make full recompute a waste
-- threshold: warn_headroom = 0.30  # the whole budget without recompute leaves this much free: warn instead of info
-- threshold: long_context = 16384  # sequences longer than this need the recompute
-- fix: --recompute-granularity selective, or drop the three --recompute-* flags
SELECT m.run_id, 'R-M02' AS subject, 'activation_fraction_without_recompute' AS metric,
       m.act_norecompute_gib / m.mem_gib AS value, $max_activation_fraction AS threshold,
       CASE WHEN n.note IS NOT NULL THEN 'info'
            WHEN 1 - m.total_no_recompute_gib / m.mem_gib >= $warn_headroom THEN 'warn' ELSE 'info' END AS severity,
       printf('every layer is recomputed, but activations without recompute are about %.1f GiB of %.0f GiB per GPU (%.0f%%)',
              m.act_norecompute_gib, m.mem_gib, 100 * m.act_norecompute_gib / m.mem_gib) AS message,
       printf('full recompute re-runs each layer''s forward: about 10-20%% of step time. Estimate: %d tokens/GPU × hidden %d × %d layers/PP%d × 34 B / TP%d = %.1f GiB without recompute; the whole budget would be %.1f GiB/GPU.',
              m.tokens::BIGINT, s.hidden, s.layers, s.pp1, s.tp1, m.act_norecompute_gib, m.total_no_recompute_gib) AS impact,
       audit_evidence(s.script, f.file, f.line, '--recompute-granularity', f.value, f."array", 'set',
                      'Full recompute with memory to spare',
                      'long context (>16K), a dense model that does not fit one node, or a comment says it OOMs without it', n.note) AS evidence
FROM script_audit s
JOIN script_memory_budget m ON m.run_id = s.run_id
JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--recompute-granularity'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--recompute-granularity'
WHERE s.recompute_granularity = 'full' AND s.recompute_method = 'uniform' AND s.recompute_num_layers = '1'
  AND coalesce(s.seq_tokens, 0) <= $long_context
  AND m.mem_gib > 0 AND m.act_norecompute_gib / m.mem_gib < $max_activation_fraction
