-- Launch scripts (ingest/script): every flag occurrence, and the context
-- derived from them. Columns match stream.ScriptFlagsSchema and
-- stream.ScriptContextSchema in order. NULL is unknown, never a guess.

CREATE TABLE IF NOT EXISTS script_flags (
    run_id       VARCHAR NOT NULL,
    script       VARCHAR NOT NULL, -- the script's path as given
    file         VARCHAR NOT NULL, -- the file the line is in (the script or a sourced file)
    line         INTEGER NOT NULL,
    "array"      VARCHAR,          -- the bash array the flag came from
    command      VARCHAR,          -- the launch command it belongs to; 'env' for variables
    branch       VARCHAR,          -- condition text; NULL when unconditional
    branch_taken BOOLEAN,          -- NULL when the condition is unknown
    flag         VARCHAR NOT NULL, -- --name, dotted Hydra key, or variable name
    value        VARCHAR,          -- after expansion; NULL for a boolean switch
    raw          VARCHAR NOT NULL, -- text before expansion
    comment      VARCHAR,          -- attached comment, # NOTE(...) included
    seq          INTEGER NOT NULL  -- order of occurrence: argparse keeps the last
);

CREATE TABLE IF NOT EXISTS script_context (
    run_id             VARCHAR NOT NULL,
    script             VARCHAR NOT NULL,
    framework          VARCHAR NOT NULL, -- relax, slime, megatron, verl, unknown
    model              VARCHAR,
    model_size         VARCHAR,          -- as named, e.g. 35B-A3B
    dense_or_moe       VARCHAR,
    modality           VARCHAR,          -- text, image, video, omni, multimodal
    gpus               BIGINT,
    nodes              BIGINT,
    gpus_per_node      BIGINT,
    mode               VARCHAR,          -- colocate, fully-async, hybrid, sync, async, sft
    tp                 BIGINT,
    pp                 BIGINT,
    vpp                BIGINT,
    cp                 BIGINT,
    ep                 BIGINT,
    etp                BIGINT,
    dp                 BIGINT,
    micro_batch        BIGINT,
    global_batch       BIGINT,
    seq_len            BIGINT,
    max_prompt_len     BIGINT,
    max_response_len   BIGINT,
    layers             BIGINT,
    hidden             BIGINT,
    ffn_hidden         BIGINT,
    heads              BIGINT,
    kv_heads           BIGINT,
    experts            BIGINT,
    moe_topk           BIGINT,
    vocab              BIGINT,
    params_b           DOUBLE,
    active_params_b    DOUBLE,
    recompute          VARCHAR,
    offload            VARCHAR,
    precision          VARCHAR,
    gpu                VARCHAR,
    problems           VARCHAR[],        -- parse problems, file:line: what was expected
    derived            VARCHAR[],        -- fields not read straight from a flag, and how
    rollout_tp         BIGINT,           -- GPUs per rollout engine (its tensor parallel size)
    max_tokens_per_gpu BIGINT
);
