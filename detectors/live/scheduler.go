package live

import (
	"context"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/detectors/report"
	"github.com/trainscope/trainscope/sql/archive"
	"github.com/trainscope/trainscope/sql/duck"
)

// Config is what a scheduler needs of the server's configuration.
type Config struct {
	// DataDir holds the reports (DataDir/reports/<FileToken(run)>.{md,json,html}).
	DataDir string
	// Quiet is how long a run must receive nothing before its complete
	// steps are analysed; Timeout analyses it anyway this long after its
	// first unanalysed batch, for runs that never go quiet.
	Quiet, Timeout time.Duration
	// Threads and MemoryLimit size each pass's scratch database.
	Threads     int
	MemoryLimit string
	// ArchiveDir, when set, receives every final pass's run as Parquet
	// (sql/archive), for the query node and distributed engines.
	ArchiveDir string
	// Upload, when set, copies what a pass wrote under ArchiveDir to the
	// archive's object store (archive.Remote.Upload).
	Upload func(ctx context.Context, dir string, w archive.Written) error
}

// Options are the scheduler's ties to the world; every field may be left
// empty.
type Options struct {
	// Logf hears each pass and each failure.
	Logf func(format string, args ...any)
	// Now is the scheduler's clock (time.Now when nil).
	Now func() time.Time
	// PendingWhy says why a run's data is not all stored yet, or "" when
	// it is (ingest.Backlog.Pending).
	PendingWhy func(ctx context.Context, run string) (string, error)
}

// Scheduler runs the detectors over a run once its data has landed: when
// the run has received nothing for Config.Quiet and nothing of it is
// pending, or Config.Timeout after its first unanalysed batch whatever is
// pending. A report made while something is pending, or while a rank of
// the run has rows but not its ranks row (its trace is not complete), is
// partial: it says so, it is recorded as partial (alert rules skip such
// runs), and the run is analysed again once the rest has arrived. The
// window is analyze's default (every step but the last of each rank, which
// the profiler often cuts short), so that a final report of a run served
// live equals analyze's report of the same traces. Findings, metrics and
// causes of the run are replaced, and the pass is logged in analyses.
//
// Each pass copies the run into a scratch in-memory database and analyses
// it there, so that detectors (which work on everything in a database) see
// that run only, and ingestion waits only for the copy.
type Scheduler struct {
	st   *duck.Store
	mu   *sync.Mutex // the store's writer lock, shared with the consumer
	set  *detectors.Set
	cfg  Config
	opts Options

	state   sync.Mutex
	pending map[string]*pendingRun
	reports map[string]*Report

	// Passes counts finished passes, Failures failed ones, DetectorErrors
	// detectors that failed within a pass that went on; LastNS is the
	// duration of the last pass.
	Passes, Failures, DetectorErrors, LastNS atomic.Int64
	// Archived counts runs written to the archive, ArchiveErrors failed
	// writes (the pass itself stands; the next final pass writes again).
	Archived, ArchiveErrors atomic.Int64
	passTime                prometheus.Histogram
}

type pendingRun struct {
	first, last time.Time
	commits     int64 // commits that touched the run: new data since a pass began?
	partial     bool  // its latest report is partial
}

// Report is the latest analysis of a run: what /runs lists, and the report
// in its three forms.
type Report struct {
	Run      string            `json:"run_id"`
	At       time.Time         `json:"analyzed_at"`
	StepLo   *int              `json:"step_lo,omitempty"`
	StepHi   *int              `json:"step_hi,omitempty"`
	Findings int               `json:"findings"`
	Partial  bool              `json:"partial"`
	Status   *report.RunStatus `json:"status,omitempty"`
	// MD, JSON and HTML are the report; HTML is empty for a report kept
	// on disk by a build that wrote no HTML.
	MD, JSON, HTML []byte `json:"-"`
}

// New makes a scheduler over st, whose writer lock mu it shares with the
// ingestor. Call Recover before Run to pick up a previous process's work.
func New(st *duck.Store, mu *sync.Mutex, set *detectors.Set, cfg Config, opts Options) *Scheduler {
	if opts.Logf == nil {
		opts.Logf = func(string, ...any) {}
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.PendingWhy == nil {
		opts.PendingWhy = func(context.Context, string) (string, error) { return "", nil }
	}
	return &Scheduler{st: st, mu: mu, set: set, cfg: cfg, opts: opts,
		pending: map[string]*pendingRun{}, reports: map[string]*Report{},
		passTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "trainscope_detector_pass_seconds",
			Help:    "Duration of a detector pass over a run (copy, detectors, report).",
			Buckets: []float64{0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600},
		})}
}

// Touched is the consumer's OnCommit: these runs got new rows.
func (s *Scheduler) Touched(runs map[string]bool) {
	now := s.opts.Now()
	s.state.Lock()
	defer s.state.Unlock()
	for run := range runs {
		p := s.pending[run]
		if p == nil {
			p = &pendingRun{first: now}
			s.pending[run] = p
		}
		p.last = now
		p.commits++
	}
}

// Run makes a pass over due runs at every tick until ctx is done.
func (s *Scheduler) Run(ctx context.Context, ticks <-chan time.Time) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticks:
		}
		s.Step(ctx)
	}
}

// TickEvery is how often Run should be ticked when nothing else decides.
func (s *Scheduler) TickEvery() time.Duration { return max(s.cfg.Quiet/4, 50*time.Millisecond) }

type dueRun struct {
	run     string
	overdue bool  // cfg.Timeout since its first unanalysed batch
	commits int64 // when it was found due
}

// Step analyses the runs that are due now: quiet and complete, or overdue.
func (s *Scheduler) Step(ctx context.Context) {
	for _, d := range s.due(s.opts.Now()) {
		why, err := s.opts.PendingWhy(ctx, d.run)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			why = "whether all of it is stored cannot be told: " + err.Error()
		}
		if why != "" && !d.overdue {
			continue // the rest is on its way; wait for it, up to the timeout
		}
		partial, err := s.analyze(ctx, d.run, why)
		if err != nil {
			if ctx.Err() != nil {
				return // shutting down: the next start analyses it again
			}
			s.Failures.Add(1)
			s.opts.Logf("analyze run %s: %v", d.run, err)
		}
		s.settle(d, partial && err == nil)
	}
}

func (s *Scheduler) due(now time.Time) []dueRun {
	s.state.Lock()
	defer s.state.Unlock()
	var out []dueRun
	for run, p := range s.pending {
		quiet, overdue := now.Sub(p.last) >= s.cfg.Quiet, now.Sub(p.first) >= s.cfg.Timeout
		if quiet || overdue {
			out = append(out, dueRun{run: run, overdue: overdue, commits: p.commits})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].run < out[j].run })
	return out
}

// settle records what became of a due run: analysed for good, or partial
// and to be looked at again (its timeout starts over). Data that came in
// during the pass keeps it pending as it is.
func (s *Scheduler) settle(d dueRun, partial bool) {
	s.state.Lock()
	defer s.state.Unlock()
	p := s.pending[d.run]
	switch {
	case p == nil || p.commits != d.commits:
	case partial:
		p.partial, p.first = true, s.opts.Now()
	default:
		delete(s.pending, d.run)
	}
}

// Report is the latest report of run, or nil.
func (s *Scheduler) Report(run string) *Report {
	s.state.Lock()
	defer s.state.Unlock()
	return s.reports[run]
}

// List is the latest report of every run, by run id.
func (s *Scheduler) List() []*Report {
	s.state.Lock()
	defer s.state.Unlock()
	out := make([]*Report, 0, len(s.reports))
	for _, r := range s.reports {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Run < out[j].Run })
	return out
}

// PendingRuns counts the runs with data not yet analysed.
func (s *Scheduler) PendingRuns() int {
	s.state.Lock()
	defer s.state.Unlock()
	return len(s.pending)
}

// PartialRuns counts the runs whose latest report is partial.
func (s *Scheduler) PartialRuns() int {
	s.state.Lock()
	defer s.state.Unlock()
	n := 0
	for _, r := range s.reports {
		if r.Partial {
			n++
		}
	}
	return n
}

// Collectors are the scheduler's Prometheus metrics: passes, failures,
// the last pass's time, a histogram of pass times, pending and partial
// runs.
func (s *Scheduler) Collectors() []prometheus.Collector {
	counter := func(name, help string, v *atomic.Int64) prometheus.Collector {
		return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help}, func() float64 { return float64(v.Load()) })
	}
	gauge := func(name, help string, v func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help}, v)
	}
	return []prometheus.Collector{
		s.passTime,
		counter("trainscope_detector_runs_total", "Detector passes over a run.", &s.Passes),
		counter("trainscope_detector_failures_total", "Detector passes that failed.", &s.Failures),
		counter("trainscope_detector_errors_total", "Detectors that failed inside a pass; the pass went on and its report names them.", &s.DetectorErrors),
		counter("trainscope_archive_runs_total", "Final passes whose run was written to the Parquet archive.", &s.Archived),
		counter("trainscope_archive_errors_total", "Final passes whose archive write failed.", &s.ArchiveErrors),
		gauge("trainscope_detector_last_pass_seconds", "Duration of the last detector pass.", func() float64 { return float64(s.LastNS.Load()) / 1e9 }),
		gauge("trainscope_detector_pending_runs", "Runs with data not yet analyzed.", func() float64 { return float64(s.PendingRuns()) }),
		gauge("trainscope_detector_partial_runs", "Runs whose latest report is partial (data still on its way); alert rules skip them.", func() float64 { return float64(s.PartialRuns()) }),
	}
}
