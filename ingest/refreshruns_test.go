package ingest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/ingest"
)

// RefreshRuns of several runs at once writes the rows it writes one run
// at a time.
func TestRefreshRunsTogether(t *testing.T) {
	ctx := context.Background()
	st := openStore(t)
	files, err := ingest.Discover([]string{"../bench/sample"})
	if err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{"a", "b"} {
		if _, err := ingest.Load(ctx, st, files[:map[string]int{"a": 1, "b": 2}[run]], ingest.Options{RunID: run, Rank: -1}); err != nil {
			t.Fatal(err)
		}
	}
	runs := func() string {
		var s string
		if err := st.Conn().QueryRowContext(ctx, "SELECT string_agg(r::VARCHAR, ' | ' ORDER BY run_id) FROM runs r").Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	one := runs()
	if err := st.Exec(ctx, "DELETE FROM runs"); err != nil {
		t.Fatal(err)
	}
	if err := ingest.RefreshRuns(ctx, st, "a", "b", "missing"); err != nil {
		t.Fatal(err)
	}
	if both := runs(); both != one || !strings.Contains(one, "| ") {
		t.Errorf("runs refreshed together:\n %s\none at a time:\n %s", both, one)
	}
}
