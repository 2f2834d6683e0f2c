package report

// Charts are what the HTML report draws for one run: where each rank's
// time goes, a timeline of one step with the collectives and the late
// arrivals, and the kernels that take the most GPU time.
type Charts struct {
	RunID string
	// Ranks is each rank's GPU time split as compute, collective
	// transfer, collective wait, other non-compute work (copies) and idle;
	// per step when PerStep, else over the analysed window.
	Ranks   []RankTime
	PerStep bool
	// TotalRanks is how many ranks the run has (Ranks may show fewer).
	TotalRanks int
	// Timeline is one step of the run (nil without GPU work).
	Timeline *Timeline
	// Kernels are the kernels with the most GPU time, over all ranks.
	Kernels []KernelTime
	// Roofline is the unique operator calls against the GPU's roofs (nil
	// without recorded shapes or a known GPU).
	Roofline *RooflineChart
}

// RankTime is one rank's GPU time by what the GPU did.
type RankTime struct {
	Rank                                 int
	Compute, Transfer, Wait, Other, Idle float64
}

// KernelTime is one kernel's total GPU time.
type KernelTime struct {
	Name, Class string
	Count       int64
	TotalNS     float64
}

// Timeline is one step of a run on aligned clocks: per rank, how busy its
// GPU computed in each of Buckets equal slices, and its collectives.
type Timeline struct {
	Step       *int
	Why        string // why this step was chosen
	StartNS    int64
	EndNS      int64
	Buckets    int
	Lanes      []Lane
	TotalRanks int // ranks in the run (Lanes may show fewer)
}

// Lane is one rank's row of the timeline.
type Lane struct {
	Rank    int
	Compute []float64 // share of each bucket with a compute kernel running
	Colls   []CollBar
}

// CollBar is one collective on a rank: it arrived at StartNS, waited for
// the last member until WaitEndNS and moved data until EndNS. Last marks
// the member that arrived last and held the others up for BlockNS.
type CollBar struct {
	Name                    string
	StartNS, WaitEndNS, End int64
	Last                    bool
	BlockNS                 int64
}

// RooflineChart is a run's roofline: the GPU's roofs and one point per
// unique operator call (roofline_shapes' rows), at its arithmetic
// intensity and achieved TFLOP/s.
type RooflineChart struct {
	GPU     string
	BWTBs   float64            // HBM bandwidth, TB/s
	Peaks   map[string]float64 // dense peak TFLOP/s per dtype drawn
	Points  []RoofPoint
	Skipped int // unique calls without FLOPs (copies, fills, lookups): no place on a FLOP/s axis
}

// RoofPoint is one unique call on the roofline chart.
type RoofPoint struct {
	Label             string
	Bound             string // compute, memory, latency
	Intensity, TFLOPS float64
	RoofPct           float64
	TimeNS, SavedNS   float64
}
