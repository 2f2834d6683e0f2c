-- The step-time account (ingest/timeline, stream.AccountRow): each step's
-- window on a rank's GPU timeline, split into what ran and, while nothing
-- ran, what the thread that launches the GPU's next work was doing.
-- Columns match stream.AccountSchema in order. Within a (run, rank, step)
-- the rows' ns add up to end_ns - start_ns.
CREATE TABLE IF NOT EXISTS step_account (
    run_id     VARCHAR NOT NULL,
    rank       INTEGER NOT NULL,
    step       INTEGER,           -- null: a trace without steps, one window
    start_ns   BIGINT NOT NULL,   -- the step's window on the GPU timeline:
    end_ns     BIGINT NOT NULL,   -- previous step's GPU work end to its own
    complete   BOOLEAN NOT NULL,  -- false: cut short by the trace's end
    category   VARCHAR NOT NULL,  -- compute, comm, copy, idle
    cause      VARCHAR NOT NULL,  -- kernels; exposed; the copy kind; sync, input, host, launch, unrecorded
    subject    VARCHAR,           -- the operator, frame or call the time went to
    stack_id   INTEGER,           -- its call stack (stacks)
    ns         BIGINT NOT NULL,
    intervals  INTEGER NOT NULL,  -- how many stretches the row sums
    first_ns   BIGINT NOT NULL,   -- when the first began
    longest_ns BIGINT NOT NULL    -- the longest stretch
);
