-- name: r_p02
-- category: config
-- kind: finding
-- severity: info
-- description: R-P02 --use-streaming-dataset missing: the driver loads the whole dataset into memory (warn for image/video data, info for text)
-- fix: add --use-streaming-dataset to ROLLOUT_ARGS (multimodal: check the fields still line up)
SELECT s.run_id, 'R-P02' AS subject, 'streaming_dataset' AS metric, 0 AS value,
       CASE WHEN n.note IS NOT NULL THEN 'info' WHEN NOT s.text_only THEN 'warn' ELSE 'info' END AS severity,
       printf('no --use-streaming-dataset: the whole %s dataset is loaded into the driver before training', coalesce(s.modality, 'text')) AS message,
       CASE WHEN s.text_only THEN 'slower start-up and driver memory proportional to the dataset.'
            ELSE 'multimodal datasets often OOM the driver or take minutes to load.' END AS impact,
       audit_evidence(s.script, a.file, a.line, '--use-streaming-dataset', NULL, a."array", 'missing',
                      'Dataset loaded whole instead of streamed',
                      'a quick debug script on a tiny dataset (< 1k rows)', n.note) AS evidence
FROM script_audit s
LEFT JOIN script_flag_notes n ON n.run_id = s.run_id AND n.flag = '--use-streaming-dataset'
LEFT JOIN script_arrays a ON a.run_id = s.run_id AND a."array" = 'ROLLOUT_ARGS'
WHERE s.framework = 'relax' AND s.has_rollout AND s.mode IS DISTINCT FROM 'sft'
  AND NOT list_contains(s.flags, '--use-streaming-dataset')
