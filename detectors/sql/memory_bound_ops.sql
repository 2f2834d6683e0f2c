-- name: memory_bound_ops
-- category: compute
-- kind: finding
-- severity: warn
-- description: memory-bound element-wise, normalisation, softmax and reduction calls (their roofline is bound by HBM bandwidth: fewer FLOPs per byte than the GPU's ridge point) that together take at least min_share of the run's GPU time: each reads its inputs from device memory and writes its output back, so a chain of them moves the same tensor several times where one fused kernel would move it once. Counts only operators whose shapes the trace recorded (record_shapes)
-- threshold: min_share = 0.10  # their GPU time over the run's GPU time (the ranks' GPU spans summed)
-- fix: fuse chains of element-wise work: torch.compile the model (or its blocks), or use fused kernels (fused RMSNorm/LayerNorm, fused rotary embedding, SwiGLU, fused cross-entropy, fused optimizers); keep activations in bf16 so that each pass moves half the bytes
-- cause: memory_bound
WITH span AS (
    SELECT run_id, sum(span_ns) AS span_ns FROM gpu_span GROUP BY run_id
), m AS (
    SELECT *, row_number() OVER (PARTITION BY run_id ORDER BY gpu_ns DESC, name, op_shape) AS pos
    FROM op_roofline_shapes
    WHERE op_class IN ('elementwise', 'norm', 'softmax', 'reduction') AND coalesce(compute_ns, 0) < memory_ns
), t AS (
    SELECT run_id, sum(calls) AS calls, sum(gpu_ns) AS gpu_ns, sum(bytes) AS bytes, sum(memory_ns) AS memory_ns,
           any_value(peak_bw) AS peak_bw, any_value(gpu) AS gpu, count(*) AS shapes,
           string_agg(printf('%s %s (%s)', name, clip(op_shape, 60), fmt_ns(gpu_ns)), '; ' ORDER BY pos) FILTER (WHERE pos <= 3) AS top
    FROM m GROUP BY run_id
)
SELECT t.run_id,
       'element-wise, norm, softmax and reduction kernels' AS subject,
       'memory_bound_share' AS metric,
       round(t.gpu_ns / sp.span_ns, 4) AS value,
       $min_share AS threshold,
       printf('%d memory-bound element-wise, normalisation, softmax and reduction calls (%d unique shapes) take %s, %.1f%% of the run''s GPU time, moving %.1f GB at %.2f TB/s (%.0f%% of the %.2f TB/s of %s); each reads its inputs from memory and writes its output back. Largest: %s',
              t.calls, t.shapes, fmt_ns(t.gpu_ns), 100 * t.gpu_ns / sp.span_ns, t.bytes / 1e9, t.bytes / (t.gpu_ns / 1e9) / 1e12,
              100 * t.memory_ns / t.gpu_ns, t.peak_bw / 1e12, t.gpu, t.top) AS message,
       printf('%.1f%% of the GPU time; fused, a chain moves its tensors once', 100 * t.gpu_ns / sp.span_ns) AS impact,
       'memory_bound_pct and coverage_pct of the roofline metric; torch.compile the model and compare' AS validation,
       'modelled' AS confidence,
       json_object('calls', t.calls, 'shapes', t.shapes, 'gpu_ns', t.gpu_ns, 'gbytes', round(t.bytes / 1e9, 3),
                   'achieved_tbs', round(t.bytes / (t.gpu_ns / 1e9) / 1e12, 3), 'peak_tbs', t.peak_bw / 1e12, 'gpu', t.gpu)::VARCHAR AS evidence
FROM t JOIN span sp USING (run_id)
WHERE t.gpu_ns >= $min_share * sp.span_ns
ORDER BY t.run_id
