-- name: r_p10
-- category: config
-- kind: finding
-- severity: info
-- description: R-P10 --no-rope-fusion in a text-only script with no comment explaining it (multimodal scripts must disable RoPE fusion, so they never trigger)
-- fix: check whether --no-rope-fusion is still needed; remove it if not, or add a # NOTE saying why
SELECT s.run_id, 'R-P10' AS subject, 'no_rope_fusion' AS metric, 1 AS value,
       '--no-rope-fusion in a text-only script, with no comment saying why' AS message,
       'RoPE fusion is a default speed-up; switching it off without a reason is often a copy-paste leftover.' AS impact,
       audit_evidence(s.script, f.file, f.line, '--no-rope-fusion', NULL, f."array", 'set',
                      '--no-rope-fusion without a comment', 'multimodal (image / video / omni) scripts, or a # NOTE beside it explains it', NULL) AS evidence
FROM script_audit s
JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--no-rope-fusion'
WHERE s.text_only AND f.comment IS NULL
  AND NOT EXISTS (SELECT 1 FROM script_flag_notes n WHERE n.run_id = s.run_id AND n.flag = '--no-rope-fusion')
