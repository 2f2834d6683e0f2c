// Command audit-counts audits every Relax launch script of the shared
// corpus and prints, per rule, how many scripts it fired on (by severity):
// a quick check that no rule is silent or fires on everything.
//
//	go run -tags duckdb_arrow ./bench/audit-counts [SCRIPTS_ROOT]
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest/script"
	"github.com/trainscope/trainscope/sql/duck"
)

func main() {
	root := "../shared/corpus/scripts/relax/scripts"
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	if err := run(root); err != nil {
		fmt.Fprintln(os.Stderr, "audit-counts:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	ctx := context.Background()
	files, _ := filepath.Glob(filepath.Join(root, "training", "*", "*.sh"))
	if len(files) == 0 {
		return fmt.Errorf("no scripts under %s/training", root)
	}
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	for i, f := range files {
		sc, _ := script.ParseFile(f, script.Options{SearchRoot: root})
		fl, c := sc.Records(fmt.Sprintf("run-%03d", i))
		if err := st.Insert(ctx, "script_flags", fl); err != nil {
			return err
		}
		if err := st.Insert(ctx, "script_context", c); err != nil {
			return err
		}
		fl.Release()
		c.Release()
	}
	set, err := detectors.NewAuditSet(detectors.Config{})
	if err != nil {
		return err
	}
	if _, err := set.RunAudit(ctx, st, detectors.AuditOptions{}); err != nil {
		return err
	}
	rep, err := detectors.BuildAuditReport(ctx, st)
	if err != nil {
		return err
	}
	counts := map[string]map[string]int{}
	for _, s := range rep.Scripts {
		seen := map[string]bool{}
		for _, f := range append(append([]detectors.AuditFinding{}, s.Performance...), s.Memory...) {
			k := f.Rule + "\x00" + f.Severity
			if seen[k] {
				continue
			}
			seen[k] = true
			if counts[f.Rule] == nil {
				counts[f.Rule] = map[string]int{}
			}
			counts[f.Rule][f.Severity]++
		}
	}
	var rules []string
	for r := range counts {
		rules = append(rules, r)
	}
	sort.Strings(rules)
	fmt.Printf("%d scripts\n%-8s %8s %5s %5s %5s\n", len(rep.Scripts), "rule", "scripts", "crit", "warn", "info")
	for _, r := range rules {
		c := counts[r]
		fmt.Printf("%-8s %8d %5d %5d %5d\n", r, c["critical"]+c["warn"]+c["info"], c["critical"], c["warn"], c["info"])
	}
	return nil
}
