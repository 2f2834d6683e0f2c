-- name: r_p07
-- category: config
-- kind: finding
-- severity: info
-- description: R-P07 pipeline parallelism the model does not need: params × 2 bytes / (TP × EP) fits in a fraction of one GPU
-- threshold: fit_fraction = 0.6  # the bf16 weights per GPU without PP below this fraction of GPU memory: PP is not needed
-- threshold: big_dense_b = 200  # dense models this large (billions) need PP
-- threshold: long_context = 16384  # longer sequences may need layers split vertically
-- fix: --pipeline-model-parallel-size 1 (drop --num-layers-per-virtual-pipeline-stage and --decoder-*-pipeline-num-layers with it)
SELECT s.run_id, 'R-P07' AS subject, 'weights_per_gpu_without_pp_gib' AS metric,
       s.params_b * 1e9 * 2 / (s.tp1 * s.ep1) / 2^30 AS value, $fit_fraction * s.mem_gib AS threshold,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       printf('--pipeline-model-parallel-size %d although %.1fB params × 2 B / (TP%d × EP%d) = %.1f GiB fits in %.0f%% of a %.0f GiB GPU',
              s.pp1, s.params_b, s.tp1, s.ep1, s.params_b * 1e9 * 2 / (s.tp1 * s.ep1) / 2^30, 100 * $fit_fraction, s.mem_gib) AS message,
       'PP adds pipeline bubbles, scheduling complexity and memory fragmentation; it pays only when the model does not fit otherwise.'
         || audit_baseline_note('PP', s.pp1, b.pp, b.name) AS impact,
       audit_evidence(s.script, f.file, f.line, '--pipeline-model-parallel-size', f.value, f."array", 'set',
                      'Pipeline parallelism the model does not need', 'a 200B+ dense model, or long context that needs layers split vertically', n.note) AS evidence
FROM script_audit s
JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--pipeline-model-parallel-size'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--pipeline-model-parallel-size'
LEFT JOIN audit_baseline_match b ON b.run_id = s.run_id
WHERE s.pp1 > 1 AND s.params_b IS NOT NULL AND s.mem_gib > 0
  AND s.params_b * 1e9 * 2 / (s.tp1 * s.ep1) / 2^30 < $fit_fraction * s.mem_gib
  AND NOT (NOT s.moe AND s.params_b >= $big_dense_b)
  AND coalesce(s.seq_tokens, 0) <= $long_context
