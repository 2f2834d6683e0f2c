package analyze

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/trainscope/trainscope/detectors/ruletest"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/internal/config"
)

// RuleTests runs the rule-test files at paths (files, or folders of
// *.yaml) against the detectors, built in or in dirs, and prints each
// failed case and a summary on out: 'trainscope test-rules'.
func RuleTests(ctx context.Context, paths []string, configPath string, dirs []string, out io.Writer) error {
	if len(paths) == 0 {
		return cli.Usage("test-rules: give a rule-test file or folder")
	}
	cfg, err := config.Load(configPath)
	if err != nil {
		return err
	}
	cfg.Detectors.Dirs = append(cfg.Detectors.Dirs, dirs...)
	suite, err := ruletest.NewSuite(ctx, cfg.Detectors)
	if err != nil {
		return cli.Input(err)
	}
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return cli.Input(err)
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		fl, err := ruletest.Files(p)
		if err != nil {
			return cli.Input(err)
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
		return cli.Input(errors.Join(loadErrs...))
	}
	fmt.Fprintf(out, "%d file(s), %d case(s): %d passed, %d failed\n", len(files), cases, cases-failed, failed)
	if failed > 0 {
		return fmt.Errorf("%d rule-test case(s) failed", failed)
	}
	return nil
}
