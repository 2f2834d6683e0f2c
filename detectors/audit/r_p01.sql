-- name: r_p01
-- category: config
-- kind: finding
-- severity: info
-- description: R-P01 SGLang loads the HF weights from disk at start although the actor broadcasts them over NCCL: --sglang-load-format dummy missing
-- fix: add --sglang-load-format dummy to SGLANG_ARGS
SELECT s.run_id, 'R-P01' AS subject, 'sglang_load_format_dummy' AS metric, 0 AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' END AS severity,
       CASE WHEN f.flag IS NULL THEN 'SGLANG_ARGS has no --sglang-load-format dummy: every rollout engine reads the HF checkpoint from disk at start'
            ELSE printf('--sglang-load-format %s: every rollout engine reads the checkpoint from disk at start', f.value) END AS message,
       'tens of seconds to minutes of start-up per launch: rollout weights always come from the actor''s NCCL broadcast.' AS impact,
       audit_evidence(s.script, coalesce(f.file, a.file), coalesce(f.line, a.line), '--sglang-load-format', f.value, coalesce(f."array", a."array"),
                      CASE WHEN f.flag IS NULL THEN 'missing' ELSE 'set' END,
                      'SGLang loads weights it will overwrite',
                      'a debug run that checks the rollout''s own weights', n.note) AS evidence
FROM script_audit s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--sglang-load-format'
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--sglang-load-format'
LEFT JOIN script_arrays a ON a.run_id = s.run_id AND a."array" = 'SGLANG_ARGS'
WHERE s.framework = 'relax' AND s.has_rollout AND s.mode IS DISTINCT FROM 'sft'
  AND coalesce(s.load_format, '') <> 'dummy'
