-- Config audit (trainscope audit): views and tables the rules in
-- detectors/audit/ read on top of script_flags and script_context.

-- The flag occurrence in force, one row per (run, flag). argparse keeps the
-- last occurrence, so the highest seq wins; an occurrence on a branch that
-- surely does not run (branch_taken = false, commented-out lines included)
-- never counts, one on an unknown branch does (the script may run it).
-- Variables (command 'env') are not flags.
CREATE OR REPLACE VIEW script_flags_effective AS
SELECT * FROM script_flags
WHERE branch_taken IS NOT FALSE AND command IS DISTINCT FROM 'env'
QUALIFY row_number() OVER (PARTITION BY run_id, flag ORDER BY seq DESC) = 1;

-- The author's "# NOTE" explanations per flag, from any occurrence: a NOTE
-- above a commented-out flag explains why it is off.
CREATE OR REPLACE VIEW script_flag_notes AS
SELECT run_id, flag, string_agg(DISTINCT comment, ' / ') AS note
FROM script_flags
WHERE comment ILIKE '%NOTE%'
GROUP BY run_id, flag;

-- Where each bash array starts: a missing flag is reported at the array it
-- belongs in.
CREATE OR REPLACE VIEW script_arrays AS
SELECT run_id, "array", arg_min(file, (line, file)) AS file, min(line) AS line
FROM script_flags
WHERE "array" IS NOT NULL
GROUP BY run_id, "array";

-- The GPU each audited script is judged against; the audit runner fills it
-- from the script, --gpu or the default (source: script, flag, assumed).
CREATE TABLE IF NOT EXISTS audit_gpu (
    run_id  VARCHAR NOT NULL,
    gpu     VARCHAR NOT NULL,
    mem_gib DOUBLE NOT NULL,
    source  VARCHAR NOT NULL
);

-- Known-good configurations (detectors/audit/baselines.csv), the anchors of
-- the Cost lines.
CREATE TABLE IF NOT EXISTS audit_baselines (
    name               VARCHAR NOT NULL,
    model              VARCHAR NOT NULL,
    gpus               BIGINT NOT NULL,
    gpu                VARCHAR,
    mode               VARCHAR,
    tp                 BIGINT,
    pp                 BIGINT,
    cp                 BIGINT,
    ep                 BIGINT,
    etp                BIGINT,
    dp                 BIGINT,
    global_batch       BIGINT,
    max_response_len   BIGINT,
    max_tokens_per_gpu BIGINT,
    key_flags          VARCHAR,
    source             VARCHAR
);

-- Model names compare without punctuation or case: Qwen3.5-35B-A3B and
-- qwen35-35B-A3B are the same model.
CREATE OR REPLACE MACRO audit_model_key(m) AS lower(regexp_replace(m, '[^A-Za-z0-9]', '', 'g'));

-- One script context row per run with defaults applied (a parallel size not
-- given is 1, as in Megatron), the effective values of the flags the rules
-- read, and the GPU it is judged against.
CREATE OR REPLACE VIEW script_audit AS
WITH f AS (
    SELECT run_id,
           list(flag) AS flags,
           max(value) FILTER (WHERE flag = '--sglang-load-format') AS load_format,
           max(value) FILTER (WHERE flag = '--attention-backend') AS attention_backend,
           max(value) FILTER (WHERE flag = '--moe-token-dispatcher-type') AS dispatcher,
           max(value) FILTER (WHERE flag = '--moe-flex-dispatcher-backend') AS dispatcher_backend,
           max(value) FILTER (WHERE flag = '--recompute-granularity') AS recompute_granularity,
           max(value) FILTER (WHERE flag = '--recompute-method') AS recompute_method,
           max(value) FILTER (WHERE flag = '--recompute-num-layers') AS recompute_num_layers,
           try_cast(max(value) FILTER (WHERE flag = '--sglang-mem-fraction-static') AS DOUBLE) AS mem_fraction,
           try_cast(max(value) FILTER (WHERE flag = '--max-staleness') AS BIGINT) AS max_staleness,
           try_cast(max(value) FILTER (WHERE flag = '--num-iters-per-train-update') AS BIGINT) AS iters_per_update,
           try_cast(max(value) FILTER (WHERE flag = '--num-data-storage-units') AS BIGINT) AS storage_units,
           max(value) FILTER (WHERE flag = '--resource') AS resource,
           -- RL with a rollout engine (SFT scripts have none)
           bool_or(flag LIKE '--sglang-%' OR flag LIKE '--rollout-%') AS has_rollout
    FROM script_flags_effective
    GROUP BY run_id
)
SELECT c.*,
       coalesce(f.flags, []) AS flags,
       f.* EXCLUDE (run_id, flags),
       coalesce(c.tp, 1) AS tp1, coalesce(c.pp, 1) AS pp1, coalesce(c.cp, 1) AS cp1,
       coalesce(c.ep, 1) AS ep1, coalesce(c.etp, 1) AS etp1, coalesce(c.dp, 1) AS dp1,
       coalesce(c.gpus_per_node, 8) AS gpn,
       -- training GPUs: what DP was derived from, else every GPU
       coalesce(c.tp, 1) * coalesce(c.pp, 1) * coalesce(c.cp, 1) * c.dp AS train_gpus,
       c.dense_or_moe = 'moe' AS moe,
       coalesce(c.modality, 'text') = 'text' AS text_only,
       coalesce(greatest(c.max_response_len, c.seq_len), c.max_response_len, c.seq_len) AS seq_tokens,
       try_cast(json_extract(f.resource, '$.actor[0]') AS BIGINT) * try_cast(json_extract(f.resource, '$.actor[1]') AS BIGINT) AS actor_gpus,
       try_cast(json_extract(f.resource, '$.rollout[0]') AS BIGINT) * try_cast(json_extract(f.resource, '$.rollout[1]') AS BIGINT) AS rollout_gpus,
       g.gpu AS gpu_name, g.mem_gib, g.source AS gpu_source,
       list_contains(coalesce(f.flags, []), '--multi-latent-attention') OR list_contains(coalesce(f.flags, []), '--kv-lora-rank') AS mla,
       upper(coalesce(c.gpu, '')) IN ('NPU', 'KLX', 'XPU') AS non_cuda
FROM script_context c
LEFT JOIN f ON f.run_id = c.run_id
LEFT JOIN audit_gpu g ON g.run_id = c.run_id;

-- Per-GPU memory estimate of the training side (Megatron, distributed
-- optimizer, bf16 weights, fp32 grads, Adam fp32 master + m + v: 2 + 4 + 12
-- = 18 bytes/param before sharding). Dense params (for MoE: the active
-- params, an over-estimate) shard over TP×PP; expert params (total − active)
-- over ETP×EP×PP; optimizer states further over DP (experts: expert DP).
-- Activations per GPU: tokens × hidden × layers/PP / TP, 34 bytes per
-- token·hidden per layer without recompute, 2 with full recompute (layer
-- inputs only) plus one layer's 34; tokens are --max-tokens-per-gpu (a
-- per-GPU figure) or micro batch × sequence / CP; fp32 logits tokens ×
-- vocab × 4 / TP; 4 GiB of CUDA context, NCCL buffers and fragmentation.
CREATE OR REPLACE VIEW script_memory AS
WITH a AS (
    SELECT s.*,
           list_contains(flags, '--optimizer-cpu-offload') AS optim_offload,
           s.params_b * 1e9 AS p_total,
           CASE WHEN s.moe THEN coalesce(s.active_params_b, s.params_b) ELSE s.params_b END * 1e9 AS p_dense,
           CASE WHEN s.moe THEN greatest(s.params_b - coalesce(s.active_params_b, s.params_b), 0) ELSE 0 END * 1e9 AS p_expert,
           greatest(coalesce(s.train_gpus, s.gpus, 1) // (s.pp1 * s.ep1 * s.etp1), 1) AS edp,
           coalesce(s.max_tokens_per_gpu,
                    coalesce(s.micro_batch, 1) * coalesce(s.seq_len, s.max_prompt_len + s.max_response_len, s.max_response_len) / s.cp1) AS tokens,
           coalesce(s.recompute_granularity, '') = 'full' AS full_recompute
    FROM script_audit s
), b AS (
    SELECT *,
           p_dense / (tp1 * pp1) + p_expert / (etp1 * ep1 * pp1) AS p_shard,
           p_dense / (tp1 * pp1 * dp1) + p_expert / (etp1 * ep1 * pp1 * edp) AS p_optim_shard,
           tokens * hidden * (layers / pp1) * 34.0 / tp1 AS act_plain,
           tokens * hidden * ((layers / pp1) * 2.0 + 34.0) / tp1 AS act_full,
           tokens * coalesce(vocab, 0) * 4.0 / tp1 AS logits
    FROM a
)
SELECT run_id, script, mem_gib, gpu_name, gpu_source, optim_offload, full_recompute, tokens, edp,
       p_total, p_shard, p_optim_shard,
       p_shard * 2 / 2^30 AS weights_gib,
       p_shard * 4 / 2^30 AS grads_gib,
       p_optim_shard * 12 / 2^30 AS optim_full_gib,
       CASE WHEN optim_offload THEN 0 ELSE p_optim_shard * 12 / 2^30 END AS optim_gib,
       (CASE WHEN full_recompute THEN act_full ELSE act_plain END + logits) / 2^30 AS act_gib,
       (act_plain + logits) / 2^30 AS act_norecompute_gib,
       4.0 AS overhead_gib
FROM b;

-- The budget per GPU: as configured, without the optimizer offload and
-- without recompute, with the verdict the rules share.
CREATE OR REPLACE VIEW script_memory_budget AS
SELECT *,
       weights_gib + grads_gib + optim_gib + coalesce(act_gib, 0) + overhead_gib AS total_gib,
       weights_gib + grads_gib + optim_full_gib + coalesce(act_gib, 0) + overhead_gib AS total_no_offload_gib,
       weights_gib + grads_gib + optim_gib + coalesce(act_norecompute_gib, 0) + overhead_gib AS total_no_recompute_gib
FROM script_memory;

-- A value's distance from a baseline's in factor-of-two steps: 2 ≥ 2 steps.
CREATE OR REPLACE MACRO audit_steps(mine, base) AS
    CASE WHEN mine > 0 AND base > 0 THEN abs(log2(mine) - log2(base)) END;

-- The baseline closest to a script: same model, GPU count within a factor
-- of 8 (the same order of magnitude), nearest in GPU count; a baseline
-- taken from the script itself is not its own anchor.
CREATE OR REPLACE VIEW audit_baseline_match AS
SELECT s.run_id, b.*
FROM script_audit s
JOIN audit_baselines b
  ON audit_model_key(b.model) = audit_model_key(s.model)
 AND s.gpus IS NOT NULL AND audit_steps(s.gpus, b.gpus) <= 3
 AND NOT ends_with(s.script, b.source)
QUALIFY row_number() OVER (PARTITION BY s.run_id ORDER BY audit_steps(s.gpus, b.gpus), b.name) = 1;

-- The Cost-line note for one dimension: empty unless the script is 2 or
-- more factor-of-two steps from the baseline, or on the other side of 1.
CREATE OR REPLACE MACRO audit_baseline_note(dim, mine, base, bname) AS
    CASE WHEN mine IS NOT NULL AND base IS NOT NULL
              AND (audit_steps(mine, base) >= 2 OR (mine = 1) <> (base = 1))
         THEN printf(' Baseline %s uses %s=%d (this script: %d).', bname, dim, base, mine)
         ELSE '' END;

-- Evidence JSON of an audit finding: where the setting is and what the
-- report prints around it. state: set (the flag is in force), missing (it
-- is not; file and line are the array it belongs in), default (not given,
-- the framework default applies), derived (a figure, not one flag).
CREATE OR REPLACE MACRO audit_evidence(script, file, line, flag, value, arr, state, title, skip_if, note) AS
    json_object('script', script, 'file', file, 'line', line, 'flag', flag, 'value', value,
                'array', arr, 'state', state, 'title', title, 'skip_if', skip_if, 'note', note)::VARCHAR;
