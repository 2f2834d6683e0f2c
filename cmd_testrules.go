package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
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
	fs := cli.FlagSet("test-rules", testRulesHelp, errOut)
	configPath := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG: its detectors.dirs")
	dirs := fs.StringArray("detectors", nil, detectorsHelp)
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return analyze.RuleTests(ctx, fs.Args(), *configPath, *dirs, out)
}
