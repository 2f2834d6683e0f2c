package detectors

import "github.com/trainscope/trainscope/detectors/report"

// The report model is package report's; these names keep the callers that
// still spell it detectors.X compiling while they move over.
type (
	Report          = report.Report
	RunStatus       = report.RunStatus
	DetectorFailure = report.DetectorFailure
	RunInfo         = report.RunInfo
	Headline        = report.Headline
	SummaryLine     = report.SummaryLine
	MetricTable     = report.MetricTable
	Finding         = report.Finding
	Recommendation  = report.Recommendation
	Cause           = report.Cause
	Waiter          = report.Waiter
	Charts          = report.Charts
	RankTime        = report.RankTime
	KernelTime      = report.KernelTime
	Timeline        = report.Timeline
	Lane            = report.Lane
	CollBar         = report.CollBar
	RooflineChart   = report.RooflineChart
	RoofPoint       = report.RoofPoint
)

// Sections are report.Sections.
var Sections = report.Sections
