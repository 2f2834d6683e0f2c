-- name: g_layers_pp
-- category: config
-- kind: finding
-- severity: critical
-- description: G-PP layers not divisible by PP (or by PP × VPP) while no uneven split (--decoder-first/last-pipeline-num-layers) is given
-- fix: choose PP (and VPP) dividing the layer count, or set --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers
SELECT s.run_id, 'G-PP' AS subject, 'layers_mod_pipeline' AS metric, s.layers % (s.pp1 * coalesce(s.vpp, 1)) AS value,
       CASE WHEN s.vpp > 1 THEN printf('%d layers are not divisible by PP%d × VPP%d = %d', s.layers, s.pp1, s.vpp, s.pp1 * s.vpp)
            ELSE printf('%d layers are not divisible by PP%d', s.layers, s.pp1) END AS message,
       'Megatron refuses to start, or the stages hold unequal layer counts and the slowest stage sets the pace.' AS impact,
       audit_evidence(s.script, f.file, f.line, '--pipeline-model-parallel-size', f.value, f."array", 'set',
                      'Layers do not split evenly over the pipeline', 'an uneven split given with --decoder-first/last-pipeline-num-layers', NULL) AS evidence
FROM script_audit s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--pipeline-model-parallel-size'
WHERE s.layers > 0 AND s.pp1 > 1 AND s.layers % (s.pp1 * coalesce(s.vpp, 1)) <> 0
  AND NOT list_contains(s.flags, '--decoder-first-pipeline-num-layers')
  AND NOT list_contains(s.flags, '--decoder-last-pipeline-num-layers')
  AND NOT list_contains(s.flags, '--pipeline-model-parallel-layout')
