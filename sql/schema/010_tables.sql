-- Event tables. Times are BIGINT nanoseconds since the Unix epoch,
-- durations BIGINT nanoseconds. Column order matches stream/schema.go.

CREATE TABLE IF NOT EXISTS runs (
    run_id      VARCHAR PRIMARY KEY,
    framework   VARCHAR,
    model       VARCHAR,
    world_size  INTEGER,
    gpu_type    VARCHAR,
    start_ns    BIGINT,
    end_ns      BIGINT,
    sources     VARCHAR[]
);

-- One row per rank of a run: where its data came from and what the trace
-- said about itself.
CREATE TABLE IF NOT EXISTS ranks (
    run_id        VARCHAR NOT NULL,
    rank          INTEGER NOT NULL,
    host          VARCHAR NOT NULL,
    source        VARCHAR NOT NULL,
    rank_source   VARCHAR,
    world_size    INTEGER,
    backend       VARCHAR,
    gpu_name      VARCHAR,
    gpu_mem_bytes BIGINT,
    num_sms       INTEGER,
    base_time_ns  BIGINT,
    start_ns      BIGINT,
    end_ns        BIGINT,
    complete      BOOLEAN,
    events        BIGINT,
    json_bytes    BIGINT,
    PRIMARY KEY (run_id, rank)
);

-- Process groups from distributedInfo.pg_config, per reporting rank.
CREATE TABLE IF NOT EXISTS process_groups (
    run_id         VARCHAR NOT NULL,
    rank           INTEGER NOT NULL,
    pg_name        VARCHAR NOT NULL,
    pg_desc        VARCHAR,
    backend_config VARCHAR,
    pg_size        INTEGER,
    ranks          INTEGER[]
);

-- Duration events are stored in two tables: slices_detail holds every row
-- that carries kernel, memcpy or collective columns (all GPU activity, and
-- host ops such as record_param_comms), slices_core every other row with
-- the core columns only. A table stores each column of each row, so keeping
-- the mostly-null detail columns off the host events halves the memory of
-- a loaded trace. Query the slices view, which unites them.
CREATE TABLE IF NOT EXISTS slices_core (
    run_id          VARCHAR NOT NULL,
    rank            INTEGER NOT NULL,
    host            VARCHAR NOT NULL,
    step            INTEGER,
    kind            VARCHAR NOT NULL,
    cat             VARCHAR NOT NULL,
    name            VARCHAR NOT NULL,
    ts              BIGINT NOT NULL,
    dur             BIGINT NOT NULL,
    pid             BIGINT NOT NULL,
    tid             BIGINT NOT NULL,
    device          INTEGER,
    stream          BIGINT,
    correlation     BIGINT,
    external_id     BIGINT,
    launch_ts       BIGINT,
    self_dur        BIGINT,
    stack_id        INTEGER, -- a host slice's call stack: stacks.stack_id
    gpu_busy_dur    BIGINT   -- the part of a host slice during which its rank's GPU was busy
);

CREATE TABLE IF NOT EXISTS slices_detail (
    run_id          VARCHAR NOT NULL,
    rank            INTEGER NOT NULL,
    host            VARCHAR NOT NULL,
    step            INTEGER,
    kind            VARCHAR NOT NULL,
    cat             VARCHAR NOT NULL,
    name            VARCHAR NOT NULL,
    ts              BIGINT NOT NULL,
    dur             BIGINT NOT NULL,
    pid             BIGINT NOT NULL,
    tid             BIGINT NOT NULL,
    device          INTEGER,
    stream          BIGINT,
    correlation     BIGINT,
    external_id     BIGINT,
    launch_ts       BIGINT,
    self_dur        BIGINT,
    stack_id        INTEGER,
    gpu_busy_dur    BIGINT,
    grid_x          INTEGER,
    grid_y          INTEGER,
    grid_z          INTEGER,
    block_x         INTEGER,
    block_y         INTEGER,
    block_z         INTEGER,
    registers       INTEGER,
    shared_mem      BIGINT,
    occupancy       DOUBLE,
    bytes           BIGINT,
    copy_kind       VARCHAR,
    host_mem        VARCHAR,
    coll_name       VARCHAR,
    coll_in_elems   BIGINT,
    coll_out_elems  BIGINT,
    coll_dtype      VARCHAR,
    coll_group_size INTEGER,
    pg_name         VARCHAR,
    pg_desc         VARCHAR,
    pg_ranks        VARCHAR,
    coll_algo       VARCHAR,
    coll_proto      VARCHAR,
    flops           BIGINT,  -- a host operator's FLOPs, from its input shapes
    flops_dtype     VARCHAR,
    op_class        VARCHAR, -- its performance model (gpu/perfmodel.go): gemm, attention, conv, softmax, norm, elementwise, reduction, embedding, optimizer
    op_shape        VARCHAR, -- its Input Dims, compact
    op_bytes        BIGINT,  -- the bytes it must read and write in device memory
    op_gpu_dur      BIGINT,  -- the GPU time of the kernels launched inside it
    op_kernels      INTEGER, -- how many kernels it launched
    op_kernel       VARCHAR  -- the longest of them
);
-- columns added after the first release: databases written before get them
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS flops BIGINT;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS flops_dtype VARCHAR;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS stack_id INTEGER;
ALTER TABLE slices_core ADD COLUMN IF NOT EXISTS stack_id INTEGER;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS gpu_busy_dur BIGINT;
ALTER TABLE slices_core ADD COLUMN IF NOT EXISTS gpu_busy_dur BIGINT;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS op_class VARCHAR;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS op_shape VARCHAR;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS op_bytes BIGINT;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS op_gpu_dur BIGINT;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS op_kernels INTEGER;
ALTER TABLE slices_detail ADD COLUMN IF NOT EXISTS op_kernel VARCHAR;

CREATE OR REPLACE VIEW slices AS
SELECT * FROM slices_detail
UNION ALL BY NAME
SELECT * FROM slices_core;

CREATE TABLE IF NOT EXISTS steps (
    run_id   VARCHAR NOT NULL,
    rank     INTEGER NOT NULL,
    step     INTEGER NOT NULL,
    start_ns BIGINT NOT NULL,
    end_ns   BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS counters (
    run_id VARCHAR NOT NULL,
    rank   INTEGER,
    host   VARCHAR NOT NULL,
    device INTEGER,
    ts     BIGINT NOT NULL,
    metric VARCHAR NOT NULL,
    value  DOUBLE NOT NULL
);
-- a sample's other labels as a JSON object (dcgm-exporter's UUID,
-- modelName, pod ...), NULL where its source has none
ALTER TABLE counters ADD COLUMN IF NOT EXISTS labels VARCHAR;
-- the CUDA device of the rank's first GPU activity: counters_by_rank looks
-- up the rank of a GPU's counters here
ALTER TABLE ranks ADD COLUMN IF NOT EXISTS device INTEGER;

-- The host call tree of each rank: one row per distinct call stack, the
-- frame (a host slice's kind and name) and its caller's stack. Slices point
-- here by stack_id; a stack's path is its parent_id chain up to a root.
-- Step annotations are one frame, 'ProfilerStep#*', whatever the step.
CREATE TABLE IF NOT EXISTS stacks (
    run_id    VARCHAR NOT NULL,
    rank      INTEGER NOT NULL,
    stack_id  INTEGER NOT NULL,
    parent_id INTEGER,
    depth     INTEGER NOT NULL,
    kind      VARCHAR NOT NULL,
    name      VARCHAR NOT NULL
);

-- Thread names from the trace's metadata events, per rank.
CREATE TABLE IF NOT EXISTS threads (
    run_id VARCHAR NOT NULL,
    rank   INTEGER NOT NULL,
    tid    BIGINT NOT NULL,
    name   VARCHAR NOT NULL
);
