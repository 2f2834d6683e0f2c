package analyze

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// detect runs the analysis pipeline (detectors.Analyze), refusing a
// --steps range the traces do not have: the part analyze, profile, report
// and export share. A detector that fails is named on errOut and in the
// report; the others' results still come out.
func detect(ctx context.Context, st *duck.Store, set *detectors.Set, window detectors.Window, stepsSpec string, errOut io.Writer) (*report.Report, error) {
	opt := detectors.AnalyzeOptions{Window: window, OnFailure: func(f report.DetectorFailure) {
		cli.Warn(errOut)(f.Error + `; the report lists it under "Detectors that failed" and holds every other detector's results`)
	}}
	if window.Set {
		opt.AfterWindow = func(ctx context.Context, st *duck.Store) error { return checkSteps(ctx, st, stepsSpec) }
	}
	return detectors.Analyze(ctx, st, set, opt)
}

// checkSteps refuses a --steps range that holds none of the traces' steps,
// naming the steps they do have, rather than printing an empty report.
func checkSteps(ctx context.Context, st *duck.Store, spec string) error {
	var inWindow int
	var have sql.NullString
	err := st.Conn().QueryRowContext(ctx, `
SELECT (SELECT count(*) FROM steps s JOIN analysis_window w USING (run_id, rank) WHERE s.step BETWEEN w.step_lo AND w.step_hi),
       (SELECT string_agg(DISTINCT step::VARCHAR, ', ' ORDER BY step::VARCHAR) FROM steps)`).Scan(&inWindow, &have)
	if err != nil {
		return err
	}
	if inWindow > 0 {
		return nil
	}
	if !have.Valid {
		return cli.Input(fmt.Errorf("--steps %s: the traces have no ProfilerStep ranges; drop --steps to analyse them whole", spec))
	}
	return cli.Input(fmt.Errorf("--steps %s: no trace has those steps; they have steps %s", spec, have.String))
}

// selection checks cmd's --run, --steps and --ranks, which pick what is
// analysed: a usage error names the flag.
func selection(cmd, run, steps, ranks string) (detectors.Window, []int, error) {
	if run != "" {
		if err := stream.CheckRunID(run); err != nil {
			return detectors.Window{}, nil, cli.Usage(cmd + ": --run: " + err.Error())
		}
	}
	w, err := stepsFlag(cmd, "--steps", steps)
	if err != nil {
		return w, nil, err
	}
	r, err := parseRanks(ranks)
	if err != nil {
		return w, nil, cli.Usage(cmd + ": --ranks: " + err.Error())
	}
	return w, r, nil
}

// stepsFlag is parseSteps for cmd's flag: a usage error names it.
func stepsFlag(cmd, flag, spec string) (detectors.Window, error) {
	w, err := parseSteps(spec)
	if err != nil {
		return w, cli.Usage(cmd + ": " + flag + ": " + err.Error())
	}
	return w, nil
}

// parseSteps reads "3-7" or "5".
func parseSteps(s string) (detectors.Window, error) {
	if s == "" {
		return detectors.Window{}, nil
	}
	lo, hi, found := strings.Cut(s, "-")
	a, err := strconv.Atoi(strings.TrimSpace(lo))
	if err != nil {
		return detectors.Window{}, fmt.Errorf("%q: want N or N-M", s)
	}
	b := a
	if found {
		if b, err = strconv.Atoi(strings.TrimSpace(hi)); err != nil {
			return detectors.Window{}, fmt.Errorf("%q: want N or N-M", s)
		}
	}
	if b < a {
		return detectors.Window{}, fmt.Errorf("%q: the range ends before it starts", s)
	}
	return detectors.Window{StepLo: a, StepHi: b, Set: true}, nil
}

// parseRanks reads "0,2,5-7".
func parseRanks(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			return nil, fmt.Errorf("%q: want ranks like 0,2 or 0-3", s)
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("%q: want ranks like 0,2 or 0-3", s)
			}
		}
		for r := a; r <= b; r++ {
			out = append(out, r)
		}
	}
	return out, nil
}
