-- name: g_seq_cp
-- category: config
-- kind: finding
-- severity: warn
-- description: G-CP sequence length against CP: a fixed --seq-length not divisible by 2 × CP (load-balanced CP splits it in 2 × CP chunks), or too few tokens per CP rank
-- threshold: min_tokens_per_rank = 2048  # fewer sequence tokens per CP rank make CP's communication dominate
-- fix: a sequence length divisible by 2 × CP, and CP no larger than sequence / min_tokens_per_rank
SELECT s.run_id, 'G-CP' AS subject, 'tokens_per_cp_rank' AS metric, s.seq_tokens / s.cp1 AS value, $min_tokens_per_rank AS threshold,
       CASE WHEN s.seq_len % (2 * s.cp1) <> 0 THEN printf('--seq-length %d is not divisible by 2 × CP%d', s.seq_len, s.cp1)
            ELSE printf('%d sequence tokens over CP%d leave %d tokens per rank', s.seq_tokens, s.cp1, s.seq_tokens // s.cp1) END AS message,
       'CP ranks exchange KV blocks every layer; with few tokens per rank the exchange outweighs the attention work.' AS impact,
       audit_evidence(s.script, f.file, f.line, '--context-parallel-size', f.value, f."array", 'set',
                      'Sequence length does not suit CP', 'a deliberate CP scaling experiment', NULL) AS evidence
FROM script_audit s
LEFT JOIN script_flags_effective f ON f.run_id = s.run_id AND f.flag = '--context-parallel-size'
WHERE s.cp1 > 1 AND s.seq_tokens > 0
  AND (s.seq_len % (2 * s.cp1) <> 0 OR s.seq_tokens / s.cp1 < $min_tokens_per_rank)
