-- The always-on pipeline's own bookkeeping.

-- Every JetStream message whose batch was committed, recorded in the same
-- transaction as its rows: a message delivered again (the ingestor died
-- between commit and ack, or a publisher resent it after the dedup window)
-- is found here and skipped, so no row is counted twice.
CREATE TABLE IF NOT EXISTS ingested_batches (
    msg_id      VARCHAR PRIMARY KEY, -- Nats-Msg-Id, or stream:<seq> without one
    stream_seq  UBIGINT NOT NULL,
    subject     VARCHAR NOT NULL,
    tbl         VARCHAR NOT NULL,
    run_id      VARCHAR,
    rows        BIGINT NOT NULL,
    bytes       BIGINT NOT NULL,
    sent_ns     BIGINT,              -- the publisher's clock, for latency
    ingested_ns BIGINT NOT NULL
);

-- Messages that can never be ingested (undecodable bytes, an unknown
-- schema version, a table that does not exist): terminated, not retried,
-- and kept here with their headers so that nothing vanishes silently.
CREATE TABLE IF NOT EXISTS rejected_batches (
    stream_seq  UBIGINT NOT NULL,
    subject     VARCHAR NOT NULL,
    msg_id      VARCHAR,
    headers     VARCHAR,
    bytes       BIGINT NOT NULL,
    reason      VARCHAR NOT NULL,
    rejected_ns BIGINT NOT NULL,
    run_token   VARCHAR              -- the run token of the subject: a report on that run is incomplete
);
ALTER TABLE rejected_batches ADD COLUMN IF NOT EXISTS run_token VARCHAR;

-- One row per detector pass the scheduler made over a run.
CREATE TABLE IF NOT EXISTS analyses (
    run_id      VARCHAR NOT NULL,
    analyzed_ns BIGINT NOT NULL,
    step_lo     INTEGER,
    step_hi     INTEGER,
    ranks       INTEGER NOT NULL,
    findings    INTEGER NOT NULL,
    took_ms     DOUBLE NOT NULL,
    partial     BOOLEAN DEFAULT false, -- made while some of the run's data was on its way
    status      VARCHAR                -- why it was partial, and what was rejected
);
ALTER TABLE analyses ADD COLUMN IF NOT EXISTS partial BOOLEAN DEFAULT false;
ALTER TABLE analyses ADD COLUMN IF NOT EXISTS status VARCHAR;

-- The latest pass over each run. Alert rules read only runs whose latest
-- report is final (NOT partial): a report on partial data raises nothing.
CREATE OR REPLACE VIEW run_status AS
SELECT run_id, max(analyzed_ns) AS analyzed_ns,
       arg_max(coalesce(partial, false), analyzed_ns) AS partial,
       arg_max(status, analyzed_ns) AS status,
       arg_max(findings, analyzed_ns) AS findings
FROM analyses GROUP BY run_id;

-- A staged store's Parquet files (duck.StagedTables): recorded in the
-- transaction that holds their batches' ledger rows, so that a file and
-- its batches are stored together or not at all. path is relative to the
-- store's staged folder.
CREATE TABLE IF NOT EXISTS staged_files (
    path      VARCHAR PRIMARY KEY,
    tbl       VARCHAR NOT NULL,
    run_id    VARCHAR,
    rows      BIGINT NOT NULL,
    bytes     BIGINT NOT NULL,
    staged_ns BIGINT NOT NULL
);
