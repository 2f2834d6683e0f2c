package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
)

// pluginID is the type of our data source (grafana-plugin/src/plugin.json),
// datasourceUID the uid provisioning gives it
// (deploy/grafana/provisioning/datasources).
const (
	pluginID      = "trainscope-trainscope-datasource"
	datasourceUID = "trainscope"
)

// trainscopeDS is the reference every panel, query, variable and
// annotation of our dashboards carries.
func trainscopeDS() common.DataSourceRef {
	return common.DataSourceRef{Type: cog.ToPtr(pluginID), Uid: cog.ToPtr(datasourceUID)}
}

// Query types and formats the plugin's backend accepts
// (grafana-plugin/pkg/plugin/query.go).
const (
	queryTypeSQL      = "sql"
	queryTypeFindings = "findings"
	formatTable       = "table"
	formatTimeSeries  = "time_series"
)

// Query is our plugin's query model: TrainscopeQuery in
// grafana-plugin/src/types.ts, decoded by Query in
// grafana-plugin/pkg/plugin/query.go. The field order is the order of the
// keys in the dashboard JSON. Scope fields are strings because the panels
// hold variable expressions ("${rank:csv}") that Grafana interpolates.
type Query struct {
	RefID      string                `json:"refId"`
	Datasource *common.DataSourceRef `json:"datasource,omitempty"`
	QueryType  string                `json:"queryType"`
	Format     string                `json:"format"`
	RawSQL     string                `json:"rawSql,omitempty"`
	Run        string                `json:"run,omitempty"`
	Ranks      string                `json:"ranks,omitempty"`
	Detector   string                `json:"detector,omitempty"`
	Category   string                `json:"category,omitempty"`
	Severity   string                `json:"severity,omitempty"`
}

var _ variants.Dataquery = Query{}

// ImplementsDataqueryVariant marks Query as a panel target for the SDK.
func (Query) ImplementsDataqueryVariant() {}

// DataqueryType is the plugin the query is for.
func (Query) DataqueryType() string { return pluginID }

// Equals compares field by field, the data source by value.
func (q Query) Equals(other variants.Dataquery) bool {
	o, ok := other.(Query)
	if !ok {
		return false
	}
	if !sameRef(q.Datasource, o.Datasource) {
		return false
	}
	q.Datasource, o.Datasource = nil, nil
	return q == o
}

func sameRef(a, b *common.DataSourceRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return deref(a.Type) == deref(b.Type) && deref(a.Uid) == deref(b.Uid)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// Validate rejects what the backend would answer with an error on every
// refresh: an unknown query type or format, SQL on a findings query or
// none on a SQL one.
func (q Query) Validate() error {
	var errs []error
	if q.RefID == "" {
		errs = append(errs, errors.New("refId is empty"))
	}
	switch q.QueryType {
	case queryTypeSQL:
		if strings.TrimSpace(q.RawSQL) == "" {
			errs = append(errs, errors.New("sql query without rawSql"))
		}
	case queryTypeFindings:
		if q.RawSQL != "" {
			errs = append(errs, errors.New("findings query with rawSql: the builder ignores it"))
		}
	default:
		errs = append(errs, fmt.Errorf("queryType %q, want %q or %q", q.QueryType, queryTypeSQL, queryTypeFindings))
	}
	if q.Format != formatTable && q.Format != formatTimeSeries {
		errs = append(errs, fmt.Errorf("format %q, want %q or %q", q.Format, formatTable, formatTimeSeries))
	}
	return errors.Join(errs...)
}

// QueryBuilder builds a Query the way the SDK's builders build theirs, so
// panels take it in WithTarget.
type QueryBuilder struct{ q Query }

var _ cog.Builder[variants.Dataquery] = (*QueryBuilder)(nil)

// sqlQuery is a table-format SQL query. The text is trimmed so the Go
// source can hold it as an indented raw string.
func sqlQuery(sql string) *QueryBuilder {
	ds := trainscopeDS()
	return &QueryBuilder{Query{RefID: "A", Datasource: &ds, QueryType: queryTypeSQL, Format: formatTable, RawSQL: strings.TrimSpace(sql)}}
}

// findingsQuery is the plugin's findings builder: no SQL, scoped by the
// Run, Ranks, Detector, Category and Severity fields.
func findingsQuery() *QueryBuilder {
	ds := trainscopeDS()
	return &QueryBuilder{Query{RefID: "A", Datasource: &ds, QueryType: queryTypeFindings, Format: formatTable}}
}

// TimeSeries asks the backend for time series frames instead of a table.
func (b *QueryBuilder) TimeSeries() *QueryBuilder { b.q.Format = formatTimeSeries; return b }

// Run scopes the query to runs; it is also what $__run expands to.
func (b *QueryBuilder) Run(v string) *QueryBuilder { b.q.Run = v; return b }

// Ranks scopes the query to ranks; it is also what $__ranks expands to.
func (b *QueryBuilder) Ranks(v string) *QueryBuilder { b.q.Ranks = v; return b }

// Detector scopes the findings builder to detectors.
func (b *QueryBuilder) Detector(v string) *QueryBuilder { b.q.Detector = v; return b }

// Category scopes the findings builder to detector categories.
func (b *QueryBuilder) Category(v string) *QueryBuilder { b.q.Category = v; return b }

// Severity scopes the findings builder to severities.
func (b *QueryBuilder) Severity(v string) *QueryBuilder { b.q.Severity = v; return b }

// Build validates the query. The error is a cog.BuildErrors because the
// SDK's panel builders assert that type on their targets' errors.
func (b *QueryBuilder) Build() (variants.Dataquery, error) {
	if err := b.q.Validate(); err != nil {
		return Query{}, cog.MakeBuildErrors("trainscope.query", err)
	}
	return b.q, nil
}
