package ingest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// A load into a staged in-memory store (analyze's) writes the slices and
// counters as Parquet files in the store's temporary folder, records each
// in staged_files, and appends none of those rows to DuckDB; every table
// reads the same rows as a load into a plain store, and Close removes the
// files. Both for traces read whole and for traces read in two passes,
// whose chunks (of 1,000 rows here) each make a flush, and whose counters
// come with them.
func TestLoadStagedInMemory(t *testing.T) {
	for _, twoPass := range []bool{false, true} {
		name := "whole"
		if twoPass {
			name = "two passes"
		}
		t.Run(name, func(t *testing.T) {
			if twoPass {
				defer func(b int64, n int) { *ingest.TwoPassBytes, *ingest.TwoPassChunkRows = b, n }(*ingest.TwoPassBytes, *ingest.TwoPassChunkRows)
				*ingest.TwoPassBytes, *ingest.TwoPassChunkRows = 1, 1000
			}
			loadStagedInMemory(t)
		})
	}
}

func loadStagedInMemory(t *testing.T) {
	ctx := context.Background()
	files, err := ingest.Discover([]string{"../bench/sample"})
	if err != nil {
		t.Fatal(err)
	}
	load := func(staged bool) (*duck.Store, map[string]string) {
		st, err := duck.Open(ctx, "", duck.Options{Staged: staged})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: "r", Rank: -1}); err != nil {
			t.Fatal(err)
		}
		rows := map[string]string{}
		for _, tbl := range duck.RunTables {
			// every row of the table, in one canonical order
			var digest string
			q := "SELECT coalesce(string_agg(md5(t::VARCHAR), ',' ORDER BY md5(t::VARCHAR)), '') || ' ' || count(*) FROM " + tbl + " t"
			if err := st.Conn().QueryRowContext(ctx, q).Scan(&digest); err != nil {
				t.Fatal(err)
			}
			rows[tbl] = digest
		}
		return st, rows
	}
	plain, want := load(false)
	plain.Close()
	st, got := load(true)
	for tbl := range want {
		if got[tbl] != want[tbl] {
			t.Errorf("%s: staged load differs from a plain one", tbl)
		}
	}
	dir := st.StagedDir()
	if dir == "" {
		t.Fatal("an in-memory store opened staged has no staged folder")
	}
	for _, tbl := range duck.StagedTables {
		var rows, appended, recorded int64
		q := "SELECT (SELECT count(*) FROM " + tbl + "), (SELECT count(*) FROM " + tbl + "_rows), (SELECT count(*) FROM staged_files WHERE tbl = ?)"
		if err := st.Conn().QueryRowContext(ctx, q, tbl).Scan(&rows, &appended, &recorded); err != nil {
			t.Fatal(err)
		}
		onDisk, _ := filepath.Glob(filepath.Join(dir, tbl, "run=*", "*.parquet"))
		if appended != 0 || (rows > 0) != (recorded > 0) || int64(len(onDisk)) != recorded {
			t.Errorf("%s: %d rows, %d of them appended to DuckDB, %d files recorded, %d on disk; want none appended, files for the rows, each recorded", tbl, rows, appended, recorded, len(onDisk))
		}
		if (tbl == "slices_core" || tbl == "step_account") && recorded == 0 {
			t.Errorf("no %s staged: the comparison above checks none of its rows", tbl)
		}
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("staged folder %s left after Close: %v", dir, err)
	}
}
