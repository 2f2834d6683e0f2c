-- The CUDA caching allocator's state from memory snapshots
-- (torch.cuda.memory._snapshot), one set of rows per snapshot file. Sizes
-- in bytes; ts in ns since the epoch; frame is the allocation site.

CREATE TABLE IF NOT EXISTS mem_segments (
    run_id         VARCHAR NOT NULL,
    rank           INTEGER NOT NULL,
    host           VARCHAR NOT NULL,
    device         INTEGER NOT NULL,
    address        BIGINT NOT NULL,
    total_size     BIGINT NOT NULL,
    allocated_size BIGINT NOT NULL,
    active_size    BIGINT NOT NULL,
    requested_size BIGINT NOT NULL,
    stream         BIGINT NOT NULL,
    segment_type   VARCHAR NOT NULL,
    pool           VARCHAR NOT NULL,
    is_expandable  BOOLEAN NOT NULL,
    blocks         INTEGER NOT NULL,
    frame          VARCHAR
);

CREATE TABLE IF NOT EXISTS mem_blocks (
    run_id          VARCHAR NOT NULL,
    rank            INTEGER NOT NULL,
    device          INTEGER NOT NULL,
    segment_address BIGINT NOT NULL,
    address         BIGINT NOT NULL,
    size            BIGINT NOT NULL,
    requested_size  BIGINT NOT NULL,
    state           VARCHAR NOT NULL,
    frame           VARCHAR
);

CREATE TABLE IF NOT EXISTS mem_events (
    run_id      VARCHAR NOT NULL,
    rank        INTEGER NOT NULL,
    device      INTEGER NOT NULL,
    seq         BIGINT NOT NULL,
    action      VARCHAR NOT NULL,
    addr        BIGINT,
    size        BIGINT,
    stream      BIGINT,
    ts          BIGINT,
    device_free BIGINT,
    frame       VARCHAR
);

-- allocator_settings of each snapshot, one row per key (values as JSON text).
CREATE TABLE IF NOT EXISTS mem_settings (
    run_id VARCHAR NOT NULL,
    rank   INTEGER NOT NULL,
    key    VARCHAR NOT NULL,
    value  VARCHAR
);
