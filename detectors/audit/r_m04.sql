-- name: r_m04
-- category: config_memory
-- kind: finding
-- severity: info
-- description: R-M04 --sglang-mem-fraction-static outside the usual range: too low starves the KV cache, too high leaves no room for weight sync and activations
-- threshold: min_fraction = 0.65  # below: KV cache too small, long sequences OOM
-- threshold: max_fraction = 0.92  # above: no headroom for weight sync
-- fix: --sglang-mem-fraction-static 0.7 to 0.85 (MoE with EP towards the low end, dense single engine towards the high end)
SELECT s.run_id, 'R-M04' AS subject, 'sglang_mem_fraction_static' AS metric, s.mem_fraction AS value,
       CASE WHEN s.mem_fraction < $min_fraction THEN $min_fraction ELSE $max_fraction END AS threshold,
       printf('--sglang-mem-fraction-static %.2f is outside %.2f-%.2f', s.mem_fraction, $min_fraction, $max_fraction) AS message,
       CASE WHEN s.mem_fraction < $min_fraction THEN 'KV cache too small: long sequences OOM or get preempted in the rollout.'
            ELSE 'too little left for weight sync and activations: OOM at weight update.' END AS impact,
       CASE WHEN s.moe THEN '--sglang-mem-fraction-static 0.7' ELSE '--sglang-mem-fraction-static 0.8' END AS fix,
       audit_evidence(s.script, f.file, f.line, '--sglang-mem-fraction-static', f.value, f."array", 'set',
                      'SGLang static memory fraction out of range',
                      'weight sync is known to OOM and needs more headroom', n.note) AS evidence
FROM script_audit s
JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--sglang-mem-fraction-static'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--sglang-mem-fraction-static'
WHERE (s.mem_fraction < $min_fraction OR s.mem_fraction > $max_fraction)
  AND n.note IS NULL
