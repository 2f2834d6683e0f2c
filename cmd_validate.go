package main

import (
	"context"
	"io"

	"github.com/trainscope/trainscope/internal/analyze"
	"github.com/trainscope/trainscope/internal/cli"
)

const validateHelp = `Usage: trainscope validate [--config FILE] [--detectors DIR]...

Checks the configuration (every unknown key and bad value, with its key
path) and every detector file: the header, the thresholds, and the SQL
itself, which is run against an empty database with trainscope's schema so
that a misspelt column is caught here and not in the middle of a run.

Flags:
`

func runValidate(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := cli.FlagSet("validate", validateHelp, errOut)
	config := fs.String("config", "", configHelp)
	dirs := fs.StringArray("detectors", nil, detectorsHelp)
	if err := cli.Parse(fs, args, out); err != nil {
		return err
	}
	return analyze.Validate(ctx, *config, *dirs, out)
}
