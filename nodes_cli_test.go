package main

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// Two jobs analysed into one database, both with rank 3's GPU (node-a:3)
// throttled: node_reputation, read with the sql command, counts both
// runs against that GPU and none against its neighbours.
func TestNodeReputationAcrossAnalyses(t *testing.T) {
	db := filepath.Join(t.TempDir(), "fleet.duckdb")
	for _, run := range []string{"job1", "job2"} {
		if code, _, errOut := trainscope(t, "analyze", "bench/throttled8", "--db", db, "--run", run, "-q"); code != 0 {
			t.Fatalf("analyze %s: exit %d: %s", run, code, errOut)
		}
	}
	code, out, errOut := trainscope(t, "sql", "--db", db, "--format", "json",
		"SELECT node, runs, bad_runs, throttled_runs, bad_run_ids FROM node_reputation WHERE entity = 'gpu' AND node IN ('node-a:3', 'node-a:2') ORDER BY node")
	if code != 0 {
		t.Fatalf("sql: exit %d: %s", code, errOut)
	}
	var rows []struct {
		Node      string  `json:"node"`
		Runs      float64 `json:"runs"`
		Bad       float64 `json:"bad_runs"`
		Throttled float64 `json:"throttled_runs"`
		BadRunIDs *string `json:"bad_run_ids"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 2 || rows[0].Node != "node-a:2" || rows[0].Runs != 2 || rows[0].Bad != 0 ||
		rows[1].Node != "node-a:3" || rows[1].Runs != 2 || rows[1].Bad != 2 || rows[1].Throttled != 2 {
		t.Fatalf("node_reputation:\n%s", out)
	}
	if rows[1].BadRunIDs == nil || *rows[1].BadRunIDs != "job2,job1" && *rows[1].BadRunIDs != "job1,job2" {
		t.Errorf("bad runs of node-a:3: %v", rows[1].BadRunIDs)
	}
}
