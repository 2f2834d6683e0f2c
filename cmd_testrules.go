package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/trainscope/trainscope/detectors/ruletest"
)

const testRulesHelp = `Usage: trainscope test-rules [--config FILE] [--detectors DIR]... PATH...

Runs rule tests: YAML files that give a detector's input rows and the
findings it must return (detectors/README.md, "Rule tests"). PATH is a
rule-test file or a folder of them (*.yaml). Each case runs on a fresh
in-memory database; a failed case prints the expected findings against
the ones that came out. Exits 1 when a case fails, 2 when a file does not
load.

Flags:
`

func runTestRules(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("test-rules", testRulesHelp, errOut)
	config := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG: its detectors.dirs")
	dirs := fs.StringArray("detectors", nil, "extra folder of .sql detectors (repeatable)")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if fs.NArg() == 0 {
		return &usageError{"test-rules: give a rule-test file or folder"}
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	cfg.Detectors.Dirs = append(cfg.Detectors.Dirs, *dirs...)
	suite, err := ruletest.NewSuite(ctx, cfg.Detectors)
	if err != nil {
		return &inputError{err}
	}
	var files []string
	for _, p := range fs.Args() {
		st, err := os.Stat(p)
		if err != nil {
			return &inputError{err}
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		fl, err := ruletest.Files(p)
		if err != nil {
			return &inputError{err}
		}
		files = append(files, fl...)
	}
	var loadErrs []error
	cases, failed := 0, 0
	for _, path := range files {
		f, err := suite.Load(path)
		if err != nil {
			loadErrs = append(loadErrs, err)
			continue
		}
		res, err := suite.Run(ctx, f)
		if err != nil {
			loadErrs = append(loadErrs, err)
		}
		for _, r := range res {
			cases++
			if r.Failed() {
				failed++
				fmt.Fprint(out, r.Report())
			}
		}
	}
	if len(loadErrs) > 0 {
		return &inputError{errors.Join(loadErrs...)}
	}
	fmt.Fprintf(out, "%d file(s), %d case(s): %d passed, %d failed\n", len(files), cases, cases-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d rule-test case(s) failed", failed)
	}
	return nil
}
