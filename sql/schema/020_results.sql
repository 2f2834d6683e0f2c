-- Detector output. A finding is a judgement (it has a severity and a fix);
-- a metric is a measurement that reports tabulate and dashboards plot.
-- metrics holds every metric detector's numbers one per row, by
-- (detector, metric); the runner also keeps each metric detector's rows
-- as it returned them in a table of its own, metric_<detector>, made from
-- its output columns (detectors/metric_tables.go), which finding
-- detectors read by column.

CREATE TABLE IF NOT EXISTS findings (
    run_id     VARCHAR NOT NULL,
    detector   VARCHAR NOT NULL,
    category   VARCHAR NOT NULL,
    severity   VARCHAR NOT NULL,
    rank       INTEGER,
    host       VARCHAR,
    step_lo    INTEGER,
    step_hi    INTEGER,
    subject    VARCHAR,
    metric     VARCHAR NOT NULL,
    value      DOUBLE,
    threshold  DOUBLE,
    message    VARCHAR NOT NULL,
    fix        VARCHAR,
    evidence   VARCHAR,
    impact     VARCHAR, -- expected effect of the fix
    validation VARCHAR, -- what to measure after the change
    confidence VARCHAR, -- measured, or hypothesis
    needs      VARCHAR  -- for a hypothesis: the artifact that would confirm it
);

CREATE TABLE IF NOT EXISTS metrics (
    run_id   VARCHAR NOT NULL,
    detector VARCHAR NOT NULL,
    rank     INTEGER,
    step_lo  INTEGER,
    step_hi  INTEGER,
    subject  VARCHAR,
    metric   VARCHAR NOT NULL,
    value    DOUBLE
);

-- The report's root causes of lost step time, ranked (position 1 is the
-- headline), written with each report so that SQL clients and Grafana see
-- what the report leads with: the cause, its cost from the critical path
-- through the collectives, the evidence chain (JSON list), and the
-- findings it shows itself in and explains (JSON lists of finding ids,
-- detector:rank).
CREATE TABLE IF NOT EXISTS root_causes (
    run_id           VARCHAR NOT NULL,
    position         INTEGER NOT NULL,
    cause_id         VARCHAR NOT NULL,
    kind             VARCHAR NOT NULL, -- late_rank, one_off_stall, slow_host, hang, slow_link
    why              VARCHAR,          -- a late rank's own cause: data_loader, compute, sync, launch, copies, ...
    rank             INTEGER,
    ranks            VARCHAR,          -- a slow link's group, as a JSON list
    host             VARCHAR,
    step             INTEGER,          -- a one-off stall's step, or the step a cause starts from
    cost_ns_per_step DOUBLE,
    cost_pct         DOUBLE,           -- of the median step
    stall_ns         DOUBLE,           -- a one-off stall's length in its step
    headline         VARCHAR NOT NULL,
    fix              VARCHAR,
    evidence         VARCHAR,
    shown_by         VARCHAR,
    explains         VARCHAR
);

-- The step window each rank is analysed over; filled by the detector
-- runner before detectors run. NULL bounds mean "the whole trace".
CREATE TABLE IF NOT EXISTS analysis_window (
    run_id  VARCHAR NOT NULL,
    rank    INTEGER NOT NULL,
    step_lo INTEGER,
    step_hi INTEGER,
    -- one integer per (run_id, rank), for joins that partition by rank:
    -- sorting on one integer instead of a string and an integer makes the
    -- ASOF joins of the exposure detectors ~30% cheaper
    rk      INTEGER
);
ALTER TABLE analysis_window ADD COLUMN IF NOT EXISTS rk INTEGER;

-- The GPU catalog entry (gpu/catalog.go) of every GPU name the ranks
-- report, filled by the detector runner: dense peak TFLOP/s per dtype and
-- bandwidths, for MFU and speed-of-light figures.
CREATE TABLE IF NOT EXISTS gpu_specs (
    gpu_name    VARCHAR PRIMARY KEY,
    catalog_key VARCHAR NOT NULL,
    bf16_tflops DOUBLE,
    fp16_tflops DOUBLE,
    fp8_tflops  DOUBLE,
    tf32_tflops DOUBLE,
    fp32_tflops DOUBLE,
    hbm_gbs     DOUBLE,
    link_gbs    DOUBLE,
    mem_gib     DOUBLE
);
