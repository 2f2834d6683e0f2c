package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// findingsDashboard: detector findings across runs. Every filter but run
// lists only what the chosen runs hold.
func findingsDashboard() *dashboard.DashboardBuilder {
	d := newDashboard("trainscope-findings", "trainscope / findings",
		"Detector findings across runs, filtered by run, detector, category, severity.").
		WithVariable(resourceVar("run", "Run", "runs", "", true)).
		WithVariable(resourceVar("detector", "Detector", "detectors", "${run:csv}", true)).
		WithVariable(resourceVar("category", "Category", "categories", "${run:csv}", true)).
		WithVariable(resourceVar("severity", "Severity", "severities", "${run:csv}", true))
	return withPanels(d,
		barchartPanel("Findings by detector and severity").Span(24).Height(7).
			WithTarget(sqlQuery(`
SELECT detector,
       count(*) FILTER (WHERE severity = 'critical') AS critical,
       count(*) FILTER (WHERE severity = 'warn') AS warn,
       count(*) FILTER (WHERE severity = 'info') AS info
FROM findings
WHERE run_id IN (${run:sqlstring}) AND detector IN (${detector:sqlstring})
GROUP BY detector
ORDER BY critical DESC, warn DESC, detector`)).
			Stacking(common.StackingModeNormal),
		tablePanel("Findings").Span(24).Height(14).
			Description("The findings builder (run, detector, category, severity), worst first. message says what was seen; fix what to change.").
			WithTarget(findingsQuery().Run("${run:csv}").Detector("${detector:csv}").Category("${category:csv}").Severity("${severity:csv}")),
	)
}
