-- name: r_m03
-- category: config_memory
-- kind: finding
-- severity: warn
-- description: R-M03 --max-tokens-per-gpu out of range for the parallelism: below one response, or two or more factor-of-two steps from resp-len × 2.5 × (TP/2) / CP × (GPU GiB / 96)
-- threshold: low_ratio = 0.25  # below this fraction of the expected value micro-batches are too small
-- threshold: high_ratio = 4.0  # above this multiple of the expected value it risks OOM
-- fix: set --max-tokens-per-gpu near the expected value (H20 96G, TP2, CP1, 8K responses: 20480; TP2 CP2: 10240) and cross-check a working script of the same model
WITH e AS (
    -- The anchor is perf-doctor's: H20 96G + TP2 + CP1 + 8K response = 20480,
    -- TP2 + CP2 = 10240, scaled by TP, CP and GPU memory.
    SELECT s.*, s.max_response_len * 2.5 * (s.tp1 / 2.0) / s.cp1 * (s.mem_gib / 96.0) AS expected
    FROM script_audit s
)
SELECT e.run_id, 'R-M03' AS subject, 'max_tokens_per_gpu_ratio' AS metric,
       e.max_tokens_per_gpu / e.expected AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       CASE WHEN e.max_tokens_per_gpu < e.max_response_len
            THEN printf('--max-tokens-per-gpu %d is below --rollout-max-response-len %d: one long response fills a micro-batch on its own', e.max_tokens_per_gpu, e.max_response_len)
            ELSE printf('--max-tokens-per-gpu %d is %.2f× the expected %.0f for TP%d/CP%d, %d-token responses on %s', e.max_tokens_per_gpu, e.max_tokens_per_gpu / e.expected, e.expected, e.tp1, e.cp1, e.max_response_len, e.gpu_name) END AS message,
       CASE WHEN e.max_tokens_per_gpu < e.expected THEN 'micro-batches too small: low kernel utilisation, more micro-batches per step.'
            ELSE 'micro-batches too large: OOM or retries.' END
         || audit_baseline_note('max-tokens-per-gpu', e.max_tokens_per_gpu, b.max_tokens_per_gpu, b.name) AS impact,
       printf('--max-tokens-per-gpu %d', (round(e.expected / 1024) * 1024)::BIGINT) AS fix,
       audit_evidence(e.script, f.file, f.line, '--max-tokens-per-gpu', f.value, f."array", 'set',
                      '--max-tokens-per-gpu out of range for the parallelism',
                      'a new model or scenario the author tuned by hand', n.note) AS evidence
FROM e
JOIN script_flags_effective f ON f.run_id = e.run_id AND f.flag = '--max-tokens-per-gpu'
LEFT JOIN script_flag_notes n ON n.run_id = e.run_id AND n.flag = '--max-tokens-per-gpu'
LEFT JOIN audit_baseline_match b ON b.run_id = e.run_id
WHERE list_contains(e.flags, '--use-dynamic-batch-size') AND e.expected > 0
  AND (e.max_tokens_per_gpu < e.max_response_len
       OR e.max_tokens_per_gpu / e.expected < $low_ratio OR e.max_tokens_per_gpu / e.expected > $high_ratio)
