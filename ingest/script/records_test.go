package script

import (
	"context"
	"database/sql"
	"testing"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// TestRecordsInsert: both batches match their schemas and go into the
// DuckDB tables the schema files create, nulls and lists included.
func TestRecordsInsert(t *testing.T) {
	s := parseT(t, `MODE=${1:-sync}
ARGS=(
   # NOTE(bob): needed for long prompts
   --context-parallel-size 2
   --use-dynamic-batch-size
   # --micro-batch-size 4
)
if [ "$MODE" = "sync" ]; then
   ARGS+=(--colocate)
fi
source ./missing.sh
ray job submit --address=http://x:8265 -- python3 train.py "${ARGS[@]}" --resource '{"actor": [1, 8], "rollout": [1, 8]}'
`, Options{})
	flags, ctxRec := s.Records("run-1")
	defer flags.Release()
	defer ctxRec.Release()
	if !flags.Schema().Equal(stream.ScriptFlagsSchema) || !ctxRec.Schema().Equal(stream.ScriptContextSchema) {
		t.Fatal("records do not carry the stream schemas")
	}
	if flags.NumRows() != int64(len(s.Flags)) || ctxRec.NumRows() != 1 {
		t.Fatalf("rows: %d flags (want %d), %d context", flags.NumRows(), len(s.Flags), ctxRec.NumRows())
	}

	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.Insert(ctx, "script_flags", flags); err != nil {
		t.Fatal(err)
	}
	if err := st.Insert(ctx, "script_context", ctxRec); err != nil {
		t.Fatal(err)
	}

	var (
		line                   int
		array, command, branch sql.NullString
		value, comment         sql.NullString
		taken                  sql.NullBool
	)
	row := st.Conn().QueryRowContext(ctx, `SELECT line, "array", command, branch, branch_taken, value, comment
		FROM script_flags WHERE run_id = 'run-1' AND flag = '--context-parallel-size'`)
	if err := row.Scan(&line, &array, &command, &branch, &taken, &value, &comment); err != nil {
		t.Fatal(err)
	}
	if line != 4 || array.String != "ARGS" || command.String != "python3 train.py" || branch.Valid || !taken.Bool ||
		value.String != "2" || comment.String != "NOTE(bob): needed for long prompts" {
		t.Errorf("row: %d %v %v %v %v %v %v", line, array, command, branch, taken, value, comment)
	}
	checkQuery(t, st, `SELECT count(*) FROM script_flags WHERE flag = '--use-dynamic-batch-size' AND value IS NULL`, "1")
	checkQuery(t, st, `SELECT branch || '|' || branch_taken::VARCHAR FROM script_flags WHERE flag = '--micro-batch-size'`, "commented out|false")
	checkQuery(t, st, `SELECT branch_taken::VARCHAR FROM script_flags WHERE flag = '--colocate'`, "true")
	checkQuery(t, st, `SELECT command FROM script_flags WHERE flag = 'MODE'`, "env")
	checkQuery(t, st, `SELECT framework || ' ' || mode || ' ' || gpus || ' ' || cp || ' ' || coalesce(tp::VARCHAR, 'null')
		FROM script_context WHERE run_id = 'run-1'`, "unknown colocate 8 2 null")
	checkQuery(t, st, `SELECT len(problems) || ' ' || (problems[1] LIKE '/job/run.sh:11: source ./missing.sh:%')::VARCHAR || ' ' || (len(derived) > 0)::VARCHAR
		FROM script_context`, "1 true true")
}

func checkQuery(t *testing.T, st *duck.Store, query, want string) {
	t.Helper()
	var got sql.NullString
	if err := st.Conn().QueryRowContext(context.Background(), query).Scan(&got); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	if got.String != want {
		t.Errorf("%s\n = %q, want %q", query, got.String, want)
	}
}

// TestRecordsEmpty: a script with nothing in it still yields its context row.
func TestRecordsEmpty(t *testing.T) {
	s := parseT(t, "", Options{})
	flags, c := s.Records("r")
	defer flags.Release()
	defer c.Release()
	if flags.NumRows() != 0 || c.NumRows() != 1 {
		t.Errorf("rows %d / %d", flags.NumRows(), c.NumRows())
	}
}
