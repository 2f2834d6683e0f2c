package main

import (
	"bytes"
	"encoding/json"

	"github.com/grafana/grafana-foundation-sdk/go/barchart"
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// newDashboard holds what the three dashboards share: the tag, UTC, a
// 30-day window (runs are analysed after the fact, rarely live) and no
// auto-refresh.
func newDashboard(uid, title, description string) *dashboard.DashboardBuilder {
	return dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"trainscope"}).
		Timezone("utc").
		Editable().
		Time("now-30d", "now").
		Refresh("").
		Version(1)
}

// withPanels adds panels in reading order. The SDK lays them out left to
// right, starting a new row once a row's widths reach 24, so each panel
// only sets its width (Span) and height. Ids follow the order, and every
// panel gets our data source: none of ours mixes sources.
func withPanels(d *dashboard.DashboardBuilder, panels ...cog.Builder[dashboard.Panel]) *dashboard.DashboardBuilder {
	for i, p := range panels {
		id := uint32(i + 1)
		d.WithPanel(amend(p, func(panel *dashboard.Panel) {
			ds := trainscopeDS()
			panel.Id, panel.Datasource = &id, &ds
		}))
	}
	return d
}

// amend changes what a builder builds where the SDK has no method for it:
// a field to set after the fact, or an SDK default to take back.
func amend[T any](b cog.Builder[T], change func(*T)) cog.Builder[T] {
	return amended[T]{b, change}
}

type amended[T any] struct {
	cog.Builder[T]
	change func(*T)
}

func (a amended[T]) Build() (T, error) {
	v, err := a.Builder.Build()
	if err == nil {
		a.change(&v)
	}
	return v, err
}

// The panel constructors below put back Grafana's own defaults where the
// SDK writes a zero value instead of leaving the option out: a legend
// with showLegend false hides it, a tooltip mode "" and a stat's empty
// reducer list are not what Grafana picks for a new panel.

func statPanel(title string) *stat.PanelBuilder {
	return stat.NewPanelBuilder().Title(title).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(false).Calcs([]string{"lastNotNull"}).Fields(""))
}

func tablePanel(title string) *table.PanelBuilder {
	return table.NewPanelBuilder().Title(title)
}

func timeseriesPanel(title string) *timeseries.PanelBuilder {
	return timeseries.NewPanelBuilder().Title(title).Legend(legend()).Tooltip(tooltip())
}

func barchartPanel(title string) *barchart.PanelBuilder {
	return barchart.NewPanelBuilder().Title(title).Legend(legend()).Tooltip(tooltip())
}

func legend() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().
		DisplayMode(common.LegendDisplayModeList).
		Placement(common.LegendPlacementBottom).
		ShowLegend(true).
		Calcs([]string{})
}

func tooltip() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeSingle).Sort(common.SortOrderNone)
}

// dataLink is a link on a panel's values. The SDK types it as a dashboard
// link, whose builder places it in the controls menu; that means nothing
// on a value, so it is left out.
func dataLink(title, url string) cog.Builder[dashboard.DashboardLink] {
	b := dashboard.NewDashboardLinkBuilder(title).Type(dashboard.DashboardLinkTypeLink).Url(url)
	return amend[dashboard.DashboardLink](b, func(l *dashboard.DashboardLink) { l.Placement = nil })
}

// resourceVar is a template variable filled from one of the plugin's
// resources (runs, hosts, ranks, ...), narrowed to the runs in run when
// that is set. A multi-value variable also offers All.
func resourceVar(name, label, resource, run string, multi bool) *dashboard.QueryVariableBuilder {
	query := map[string]any{"resource": resource}
	if run != "" {
		query["run"] = run
	}
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(trainscopeDS()).
		Query(dashboard.StringOrMap{Map: query}).
		Definition(resource).
		Refresh(dashboard.VariableRefreshOnDashboardLoad).
		Multi(multi).
		IncludeAll(multi).
		Hide(dashboard.VariableHideDontHide).
		Sort(dashboard.VariableSortDisabled)
}

// countAlarm colours a count green at zero and color from one up.
func countAlarm(color string) *dashboard.ThresholdsConfigBuilder {
	return dashboard.NewThresholdsConfigBuilder().
		Mode(dashboard.ThresholdsModeAbsolute).
		Steps([]dashboard.Threshold{{Color: "green"}, {Value: cog.ToPtr(1.0), Color: color}})
}

func thresholdColors() *dashboard.FieldColorBuilder {
	return dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdThresholds)
}

// render writes a dashboard as indented JSON ending in a newline.
func render(d dashboard.Dashboard) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(d); err != nil {
		return nil, err
	}
	return unescapeHTML(buf.Bytes()), nil
}

// unescapeHTML turns \u003c, \u003e and \u0026 back into <, > and &. The
// SDK marshals panels with json.Marshal, which escapes them for HTML, and
// SetEscapeHTML on the outer encoder does not undo that; SQL is full of <>
// and &, and the committed JSON is reviewed as text. Escapes are walked in
// pairs so an escaped backslash before "u003c" is left alone.
func unescapeHTML(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' || i+1 == len(b) {
			out = append(out, b[i])
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c":
				out, i = append(out, '<'), i+5
				continue
			case "003e":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			}
		}
		out, i = append(out, b[i], b[i+1]), i+1
	}
	return out
}
