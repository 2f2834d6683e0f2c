package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/sql/duck"
)

// Labels is labels.json as bench/gpu/scenarios.py writes it.
type Labels struct {
	GPU           string  `json:"gpu"`
	Torch         string  `json:"torch"`
	CUDA          string  `json:"cuda,omitempty"`
	Created       string  `json:"created,omitempty"`
	ProfiledSteps int     `json:"profiled_steps"`
	Scenarios     []Label `json:"scenarios"`
}

// Label is one scenario: its folder and what was injected.
type Label struct {
	Name  string  `json:"name"`
	Dir   string  `json:"dir"`
	Cause string  `json:"cause"` // none, stall, input, sync, copies, precision, launch; memory; ncu
	What  string  `json:"what"`
	MS    float64 `json:"ms,omitempty"`
	// the memory scenario: torch's own totals when the snapshot was taken
	Reserved  int64 `json:"reserved_bytes,omitempty"`
	Allocated int64 `json:"allocated_bytes,omitempty"`
	// the ncu scenario: the capture and how many kernels it profiled
	File    string `json:"file,omitempty"`
	Kernels int    `json:"kernels,omitempty"`
}

func readLabels(path string) (*Labels, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var l Labels
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(l.Scenarios) == 0 {
		return nil, fmt.Errorf("%s: no scenarios", path)
	}
	return &l, nil
}

func (l *Labels) write(path string) error {
	raw, err := json.MarshalIndent(l, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o644)
}

// row is one scenario's outcome.
type row struct {
	label  Label
	claim  string // the cause the verdict names first
	said   string // the verdict's words for it
	right  bool
	detail string // what was measured (memory totals, ncu kernels)
	err    error
}

// result is every scenario's outcome.
type result struct {
	labels *Labels
	rows   []row
}

func (r *result) missed() int {
	n := 0
	for _, x := range r.rows {
		if !x.right {
			n++
		}
	}
	return n
}

// score analyses every scenario of dir's labels.json; progress goes to log.
func score(ctx context.Context, set *detectors.Set, dir string, log io.Writer) (*result, error) {
	labels, err := readLabels(filepath.Join(dir, "labels.json"))
	if err != nil {
		return nil, err
	}
	res := &result{labels: labels}
	for _, l := range labels.Scenarios {
		r := row{label: l}
		switch l.Cause {
		case "memory":
			r.detail, r.right, r.err = checkMemory(ctx, set, filepath.Join(dir, l.Dir), l)
		case "ncu":
			r.detail, r.right, r.err = checkNCU(ctx, filepath.Join(dir, l.File), l)
		default:
			var rep *report.Report
			rep, r.err = analyze(ctx, set, filepath.Join(dir, l.Dir), nil)
			if r.err == nil {
				r.claim, r.said = claimOf(rep)
				r.right = names(l.Cause, r.claim)
			}
		}
		if r.err != nil {
			r.right = false
		}
		fmt.Fprintf(log, "%s: %s\n", l.Name, verdictWord(r))
		res.rows = append(res.rows, r)
	}
	return res, nil
}

// injected are the causes a scenario injects; a healthy run's verdict must
// claim none of them.
var injected = map[string]bool{"stall": true, "input": true, "sync": true, "copies": true, "precision": true}

// names says whether a verdict that claims claim names the cause.
func names(cause, claim string) bool {
	if cause == "none" {
		return !injected[claim]
	}
	return claim == cause
}

// analyze loads dir into a fresh in-memory store as `trainscope analyze`
// does (default window: every step but the last) and builds the report;
// query, when set, runs on the store before it closes.
func analyze(ctx context.Context, set *detectors.Set, dir string, query func(*duck.Store) error) (*report.Report, error) {
	st, err := duck.Open(ctx, "", duck.Options{Threads: 2, MemoryLimit: "512MB"})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	files, err := ingest.Discover([]string{dir})
	if err != nil {
		return nil, err
	}
	if _, err := ingest.Load(ctx, st, files, ingest.Options{RunID: filepath.Base(dir), Rank: -1}); err != nil {
		return nil, err
	}
	rep, err := detectors.Analyze(ctx, st, set, detectors.AnalyzeOptions{})
	if err == nil && query != nil {
		err = query(st)
	}
	return rep, err
}

// checkMemory compares the snapshot's reserved and allocated totals, as
// the report's mem_summary gives them, with torch's own.
func checkMemory(ctx context.Context, set *detectors.Set, dir string, l Label) (string, bool, error) {
	rep, err := analyze(ctx, set, dir, nil)
	if err != nil {
		return "", false, err
	}
	for _, m := range rep.Metrics {
		if m.Detector != "mem_summary" || len(m.Rows) == 0 {
			continue
		}
		col := map[string]int{}
		for i, c := range m.Columns {
			col[c] = i
		}
		var reserved, allocated int64
		for _, r := range m.Rows {
			reserved += report.Int(r[col["reserved_bytes"]])
			allocated += report.Int(r[col["allocated_bytes"]])
		}
		ok := reserved == l.Reserved && allocated == l.Allocated
		return fmt.Sprintf("reserved %s (torch %s), allocated %s (torch %s)", mib(reserved), mib(l.Reserved), mib(allocated), mib(l.Allocated)), ok, nil
	}
	return "no mem_summary table in the report", false, nil
}

// checkNCU loads the captured ncu stdout and counts its kernels.
func checkNCU(ctx context.Context, path string, l Label) (string, bool, error) {
	var launches int
	var first string
	_, err := analyze(ctx, &detectors.Set{}, filepath.Dir(path), func(st *duck.Store) error {
		return st.Conn().QueryRowContext(ctx, `SELECT count(DISTINCT launch), coalesce(min(kernel), '') FROM kernel_metrics`).Scan(&launches, &first)
	})
	if err != nil {
		return "", false, err
	}
	return fmt.Sprintf("%d of %d profiled kernels loaded (%s)", launches, l.Kernels, short(first, 40)), launches == l.Kernels && launches > 0, nil
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func short(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func verdictWord(r row) string {
	switch {
	case r.err != nil:
		return "error: " + r.err.Error()
	case r.right:
		return "named"
	}
	return "missed (claimed " + r.claim + ")"
}

// write prints the table.
func (r *result) write(w io.Writer) {
	fmt.Fprintf(w, "GPU: %s; torch %s; %d profiled steps a scenario.\n\n", r.labels.GPU, r.labels.Torch, r.labels.ProfiledSteps)
	fmt.Fprintln(w, "| scenario | injected | must name | the verdict named first | right |")
	fmt.Fprintln(w, "| --- | --- | --- | --- | --- |")
	for _, x := range r.rows {
		said := x.detail
		if x.claim != "" {
			said = fmt.Sprintf("%s: %s", x.claim, short(strings.ReplaceAll(x.said, "|", "/"), 140))
		}
		if x.err != nil {
			said = "error: " + x.err.Error()
		}
		right := "yes"
		if !x.right {
			right = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s |\n", x.label.Name, x.label.What, x.label.Cause, said, right)
	}
	fmt.Fprintf(w, "\n%d of %d scenarios right.\n", len(r.rows)-r.missed(), len(r.rows))
}
