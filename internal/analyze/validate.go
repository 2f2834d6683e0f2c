package analyze

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/duck"
)

// Validate checks the config at configPath and every detector file,
// built in or in dirs, running each one's SQL on an empty database with
// the schema, and lists the detectors on out: 'trainscope validate'.
func Validate(ctx context.Context, configPath string, dirs []string, out io.Writer) error {
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	cfg.Detectors.Dirs = append(cfg.Detectors.Dirs, dirs...)
	set, err := detectors.NewSet(cfg.DetectorsConfig())
	if err != nil {
		return cli.Input(err)
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
	if err := cfg.Serve.AutoTrigger.CheckDetectors(set.Names(detectors.KindFinding)); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return cli.Input(errors.Join(errs...))
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
