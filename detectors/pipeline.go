package detectors

import (
	"context"
	"time"

	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/sql/duck"
)

// AnalyzeOptions are what the callers of Analyze differ in: analyze and
// report on a folder or a database, the live pass on a run's data.
type AnalyzeOptions struct {
	// Window is the steps to analyse (Window{}: every step but each rank's
	// last, often cut short).
	Window Window
	// AfterWindow, when set, runs once the window is in the store and
	// before any detector: the CLI refuses a --steps range the traces do
	// not have, the live pass reads the steps it analyses.
	AfterWindow func(ctx context.Context, st *duck.Store) error
	// OnFailure hears of each detector that failed; the report lists them
	// too, and the other detectors' results still come out.
	OnFailure func(report.DetectorFailure)
	// Status, when set, is the run's status (partial, batches missing); it
	// is the report's before the causes are saved.
	Status *report.RunStatus
	// At stamps the node history rows (time.Now when zero).
	At time.Time
	// GPU names the GPU the config audit judges launch scripts for ("":
	// from the traces).
	GPU string
}

// Analyze is the one analysis pipeline every command and the live pass
// run: it sets the window, runs every detector of set (and the config audit
// when the store holds launch scripts), builds the report, and saves its
// root causes (root_causes) and each GPU's and link's outcome
// (node_history) into the store, for sql and Grafana.
//
// The shared views the detectors read are computed once for the detectors
// and the report, and dropped before Analyze returns, whatever happens.
func Analyze(ctx context.Context, st *duck.Store, set *Set, opt AnalyzeOptions) (*report.Report, error) {
	if err := SetWindow(ctx, st, opt.Window); err != nil {
		return nil, err
	}
	if opt.AfterWindow != nil {
		if err := opt.AfterWindow(ctx, st); err != nil {
			return nil, err
		}
	}
	defer ReleaseShared(context.WithoutCancel(ctx), st)
	results, err := set.runWithAudit(ctx, st, opt.GPU, true)
	if err != nil {
		return nil, err
	}
	if opt.OnFailure != nil {
		for _, f := range Failures(results) {
			opt.OnFailure(f)
		}
	}
	rep, err := BuildReport(ctx, st, results)
	if err != nil {
		return nil, err
	}
	if opt.Status != nil {
		rep.Status = opt.Status
	}
	if err := SaveCauses(ctx, st, rep); err != nil {
		return nil, err
	}
	at := opt.At
	if at.IsZero() {
		at = time.Now()
	}
	return rep, SaveNodeHistory(ctx, st, rep, at)
}
