package report

// Severities of findings, from least to most urgent: a detector's
// severity header takes one of them (detectors.Severities is this list).
var Severities = []string{"info", "warn", "critical"}

// Report is everything a rendered report shows, for one or more runs.
type Report struct {
	// Headline is each run's verdict, the report's first line
	Headline        []Headline       `json:"headline"`
	Runs            []RunInfo        `json:"runs"`
	Summary         []SummaryLine    `json:"summary"`
	Metrics         []MetricTable    `json:"metrics"`
	Findings        []Finding        `json:"findings"`
	Recommendations []Recommendation `json:"recommendations"`
	// Failed lists the detectors whose query failed: their results are
	// missing from this report, the rest is complete.
	Failed []DetectorFailure `json:"detector_failures,omitempty"`
	// Causes are the root causes of lost step time, costliest first.
	Causes []Cause `json:"root_causes,omitempty"`
	// Status is set on a report of a run served live whose data is not
	// all in: a partial report (more will come) or an incomplete one
	// (some batches were rejected and never will). Nil on a final report.
	Status *RunStatus `json:"status,omitempty"`

	// Roles are the detectors' places in the cause graph and the report
	// by name, as the builder copied them from their headers (the
	// markdown's sections read them).
	Roles map[string]Role `json:"-"`

	charts map[string]*Charts // per run: what the HTML report draws
}

// RunStatus says why a report does not cover all of a run's data.
type RunStatus struct {
	// Partial: the run has data on its way (messages not yet stored,
	// ranks not yet complete). The report will be replaced once it has
	// arrived; alerts hold off until then.
	Partial bool     `json:"partial"`
	Reasons []string `json:"reasons,omitempty"`
	// Missing are data that will never arrive (rejected batches).
	Missing []string `json:"missing,omitempty"`
}

// DetectorFailure is a detector that could not run, and why.
type DetectorFailure struct {
	Detector string `json:"detector"`
	Kind     string `json:"kind"`
	Error    string `json:"error"`
}

// RunInfo describes an analysed run.
type RunInfo struct {
	RunID     string   `json:"run_id"`
	Ranks     []int    `json:"ranks"`
	WorldSize int      `json:"world_size"`
	GPUs      []string `json:"gpus"`
	GPUSpecs  []string `json:"gpu_specs,omitempty"`     // catalog keys of the GPUs, where known
	Dtypes    []string `json:"matmul_dtypes,omitempty"` // dtypes of the matmul and attention operators the trace recorded
	Steps     string   `json:"steps_analysed"`
	Events    int64    `json:"events"`
	Sources   int      `json:"sources"`
	// GPUActivities counts the kernels, copies and memsets its traces hold
	// (0: a CPU-only trace, or a memory snapshot alone); TraceRanks the
	// ranks that came from a trace, not from a snapshot alone
	GPUActivities int64 `json:"gpu_activities"`
	TraceRanks    int   `json:"trace_ranks"`
	// MedianStepNS is the run's median step time in ns (0 when unknown):
	// the step the verdict's costs are shares of
	MedianStepNS float64 `json:"-"`
}

// Headline is a run's verdict in one sentence: its costliest root cause
// (Cause names its id), or why there is none.
type Headline struct {
	RunID   string  `json:"run_id"`
	Text    string  `json:"text"`
	Kind    string  `json:"kind"` // the cause's kind; "none", "no_gpu_work", "memory_only" or "graph_capture" without one
	Cause   string  `json:"cause,omitempty"`
	CostNS  float64 `json:"cost_ns_per_step,omitempty"`
	CostPct float64 `json:"cost_pct_of_step,omitempty"`
	Fix     string  `json:"fix,omitempty"`
	// Balanced is set for a run of several ranks in which no rank holds
	// the others up by a noticeable share of the step (Kind is "none").
	Balanced bool `json:"-"`
	// Limiter is what bounds the run's steps (the bottleneck_class
	// finding's message), "" when nothing was classified.
	Limiter string `json:"-"`
	// Lines are the verdict's lines under the headline, in order: what
	// part of the job was traced, where a typical step goes, the outlier
	// steps, the limiter and the rest of the summary. Renderers print
	// them as they are.
	Lines []string `json:"-"`
}

// SummaryLine is one statement of the summary, with the detector behind it.
type SummaryLine struct {
	RunID    string `json:"run_id"`
	Text     string `json:"text"`
	Detector string `json:"detector,omitempty"`
}

// MetricTable is a metric detector's output.
type MetricTable struct {
	Detector    string   `json:"detector"`
	Category    string   `json:"category"`
	Description string   `json:"description"`
	Columns     []string `json:"columns"`
	Rows        [][]any  `json:"rows"`
}

// ColumnIndex is each column's position in the table's rows, by name.
func (t MetricTable) ColumnIndex() map[string]int {
	col := map[string]int{}
	for i, c := range t.Columns {
		col[c] = i
	}
	return col
}

// Finding is one row of the findings table, with its place in the cause
// graph: the root causes it shows (Shows) or is explained by (CausedBy).
type Finding struct {
	ID         string   `json:"id"`
	CausedBy   []string `json:"caused_by,omitempty"`
	Shows      []string `json:"shows,omitempty"`
	RunID      string   `json:"run_id"`
	Detector   string   `json:"detector"`
	Category   string   `json:"category"`
	Severity   string   `json:"severity"`
	Rank       *int64   `json:"rank,omitempty"`
	Host       string   `json:"host,omitempty"`
	StepLo     *int64   `json:"step_lo,omitempty"`
	StepHi     *int64   `json:"step_hi,omitempty"`
	Subject    string   `json:"subject,omitempty"`
	Metric     string   `json:"metric"`
	Value      *float64 `json:"value,omitempty"`
	Threshold  *float64 `json:"threshold,omitempty"`
	Message    string   `json:"message"`
	Fix        string   `json:"fix,omitempty"`
	Evidence   any      `json:"evidence,omitempty"`
	Impact     string   `json:"impact,omitempty"`
	Validation string   `json:"validation,omitempty"`
	Confidence string   `json:"confidence"`
	Needs      string   `json:"needs,omitempty"`
}

// Recommendation is a fix, with the findings that call for it, what it
// should gain and how to tell that it did.
type Recommendation struct {
	Severity   string   `json:"severity"`
	Fix        string   `json:"fix"`
	Because    []string `json:"because"`
	Impact     []string `json:"impact,omitempty"`
	Validation []string `json:"validation,omitempty"`
	Hypothesis bool     `json:"hypothesis"`
	Needs      []string `json:"needs,omitempty"`
}

// Role is a detector's place in the report and the cause graph, as its
// header states it: its category, the root cause its findings make
// (Cause), what they show on a cause's own rank (Shows), the symptom of
// a cause they are (Symptom) and the kinds of cause they are evidence for
// (Evidence: their message, fix and the reason they show are read into
// the cause).
type Role struct {
	Category string
	Cause    string
	Shows    []string
	Symptom  string
	Evidence []string
}

// MedianStepNS is the median step time of run, in ns (0 when unknown).
func (r *Report) MedianStepNS(run string) float64 {
	for _, ri := range r.Runs {
		if ri.RunID == run {
			return ri.MedianStepNS
		}
	}
	return 0
}

// Charts returns what the HTML report draws for a run (nil for a run the
// report does not hold).
func (r *Report) Charts(run string) *Charts { return r.charts[run] }

// SetCharts gives run the charts c (the builder's, or a report put
// together by hand).
func (r *Report) SetCharts(run string, c *Charts) {
	if r.charts == nil {
		r.charts = map[string]*Charts{}
	}
	r.charts[run] = c
}

// Sections are the report's groups of findings, in PerfTracker's order
// (GPU compute, memory operations, communication, CUDA runtime, Python and
// CPU, slow nodes, hangs), then memory, the config audit and anything else.
var Sections = []string{"GPU compute", "GPU memory operations", "Communication", "CUDA runtime",
	"Host: Python, CPU ops, data loading", "Slow nodes", "Hangs", "GPU memory (allocator)", "Config audit", "Other"}

// SectionOf is the section a finding is reported under: a hang's and a
// slow host's (the findings of detectors whose cause header says so) have
// their own, the rest go by category.
func (r *Report) SectionOf(f Finding) string {
	switch r.Roles[f.Detector].Cause {
	case KindHang:
		return "Hangs"
	case KindSlowHost:
		return "Slow nodes"
	}
	switch f.Category {
	case "utilization", "compute", "kernels", "steps":
		return "GPU compute"
	case "memory_ops":
		return "GPU memory operations"
	case "communication":
		return "Communication"
	case "runtime", "sync", "launch":
		return "CUDA runtime"
	case "cpu", "input":
		return "Host: Python, CPU ops, data loading"
	case "memory":
		return "GPU memory (allocator)"
	case "config", "config_memory":
		return "Config audit"
	case "hardware":
		return "GPU hardware (counters)"
	}
	return "Other"
}

// Num is a metric table's cell as a number (the store's integers and
// floats), 0 for anything else.
func Num(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case int32:
		return float64(x)
	case int:
		return float64(x)
	case float64:
		return x
	case float32:
		return float64(x)
	}
	return 0
}

// Int is a metric table's cell as an integer (a float truncated), 0 for
// anything but a number.
func Int(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case int32:
		return int64(x)
	case int:
		return int64(x)
	}
	return int64(Num(v))
}
