package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/sql/duck"
)

const validateHelp = `Usage: trainscope validate [--config FILE] [--detectors DIR]...

Checks the configuration (every unknown key and bad value, with its key
path) and every detector file: the header, the thresholds, and the SQL
itself, which is run against an empty database with trainscope's schema so
that a misspelt column is caught here and not in the middle of a run.

Flags:
`

func runValidate(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("validate", validateHelp, errOut)
	config := fs.String("config", "", "config file (YAML, TOML or JSON); also TRAINSCOPE_CONFIG")
	dirs := fs.StringArray("detectors", nil, "extra folder of .sql detectors (repeatable)")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	cfg, err := loadConfig(*config)
	if err != nil {
		return err
	}
	cfg.Detectors.Dirs = append(cfg.Detectors.Dirs, *dirs...)
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return &inputError{err}
	}
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	if err := detectors.SetWindow(ctx, st, detectors.Window{}); err != nil {
		return err
	}
	var errs []error
	// metric detectors first: finding detectors read their tables
	for _, kind := range []string{detectors.KindMetric, detectors.KindFinding} {
		for _, d := range set.Detectors {
			if d.Kind != kind {
				continue
			}
			if err := d.Check(ctx, st); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if len(errs) > 0 {
		return &inputError{errors.Join(errs...)}
	}
	fmt.Fprintf(out, "config ok; %d detectors ok\n", len(set.Detectors))
	for _, d := range set.Detectors {
		src := "built-in"
		if !d.Builtin {
			src = d.File
		}
		fmt.Fprintf(out, "  %-22s %-8s %-14s %s\n", d.Name, d.Kind, d.Category, src)
	}
	return nil
}
