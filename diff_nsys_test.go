package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/trainscope/trainscope/bench/corpus"
)

// stretchCapture copies an Nsight Systems export and makes its job slower
// by factor: every activity's start and end move away from the capture's
// first timestamp, and what then falls after the original capture's end
// is cut, as a capture of the same length of a slower job would be.
func stretchCapture(t *testing.T, src string, factor float64) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "after.sqlite")
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", dst)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables := []string{"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
		"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "CUPTI_ACTIVITY_KIND_OVERHEAD", "NVTX_EVENTS"}
	var t0, t1 int64
	if err := db.QueryRow(`SELECT min(start), max("end") FROM CUPTI_ACTIVITY_KIND_KERNEL`).Scan(&t0, &t1); err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		q := fmt.Sprintf(`UPDATE %[1]s SET start = %[2]d + CAST((start - %[2]d) * %[3]g AS INTEGER),
			"end" = CASE WHEN "end" IS NULL THEN NULL ELSE %[2]d + CAST(("end" - %[2]d) * %[3]g AS INTEGER) END
			WHERE start >= %[2]d`, tb, t0, factor)
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", tb, err)
		}
		if _, err := db.Exec(fmt.Sprintf(`DELETE FROM %s WHERE start > %d`, tb, t1)); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// The case that asked for a verdict: two one-second Nsight captures
// without ProfilerSteps, "after" 30% slower. Per capture the slower run
// fits fewer iterations and reads as "less frequent"; per iteration it is
// 30% slower in everything.
func TestDiffNsysCaptures(t *testing.T) {
	before := corpus.Path(t, "nsys/h100_2gpu_1s.sqlite")
	after := stretchCapture(t, before, 1.3)
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"diff", "-q", "--format", "json", before, after}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var rep struct {
		Verdict struct {
			DeltaPct float64 `json:"delta_pct"`
			Text     string  `json:"verdict"`
			Base     struct {
				Source string  `json:"source"`
				Marker string  `json:"marker"`
				Count  float64 `json:"iterations"`
			} `json:"base"`
			New struct {
				Source string  `json:"source"`
				Marker string  `json:"marker"`
				Count  float64 `json:"iterations"`
			} `json:"new"`
		} `json:"verdict"`
		Changes []struct {
			Name   string `json:"name"`
			Change string `json:"change"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	v := rep.Verdict
	if v.Base.Source != "kernel" || v.Base.Marker != v.New.Marker {
		t.Errorf("cut by %s %q and %s %q, want one kernel for both", v.Base.Source, v.Base.Marker, v.New.Source, v.New.Marker)
	}
	if math.Abs(v.DeltaPct-30) > 1 || !strings.Contains(v.Text, "slower per iteration") {
		t.Errorf("verdict %.1f%%: %s", v.DeltaPct, v.Text)
	}
	if v.Base.Count < 10 || v.New.Count >= v.Base.Count {
		t.Errorf("iterations %.1f and %.1f: the slower capture should hold fewer", v.Base.Count, v.New.Count)
	}
	// what leads is what got slower, not what the shorter capture ran less
	// often (operators cut at the capture's edge may read faster further down)
	if len(rep.Changes) == 0 || rep.Changes[0].Change != "slower" {
		t.Fatalf("changes %+v, want a slower one first", rep.Changes)
	}
	for _, c := range rep.Changes[:min(5, len(rep.Changes))] {
		if c.Change == "less_frequent" || c.Change == "more_frequent" {
			t.Errorf("%s reads as %s; per iteration only durations changed", c.Name, c.Change)
		}
	}
}
