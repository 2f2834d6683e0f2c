package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/trainscope/trainscope/grafana-plugin/pkg/macros"
)

// Query types and formats of the query model.
const (
	QueryTypeSQL      = "sql"
	QueryTypeFindings = "findings"

	FormatTable      = "table"
	FormatTimeSeries = "time_series"
)

// Query is the query model the frontend sends (and provisioned
// dashboards and alert rules hold).
type Query struct {
	QueryType string `json:"queryType"`
	RawSQL    string `json:"rawSql"`
	Format    string `json:"format"`
	RowLimit  int64  `json:"rowLimit"`
	// Run, Ranks, Detector, Category, Severity scope the findings builder
	// and feed $__run and $__ranks. Each takes one value, a list, or a
	// comma-separated string (what a multi-value variable interpolates
	// to); "All", "$__all" and "*" mean no filter.
	Run      Strings `json:"run"`
	Ranks    Strings `json:"ranks"`
	Detector Strings `json:"detector"`
	Category Strings `json:"category"`
	Severity Strings `json:"severity"`
}

// Strings reads a JSON string, number, or list of either.
type Strings []string

// UnmarshalJSON accepts "a", "a,b", 3, ["a", 3].
func (s *Strings) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	var out []string
	add := func(x any) error {
		switch t := x.(type) {
		case nil:
		case string:
			for _, p := range strings.Split(t, ",") {
				p = strings.Trim(strings.TrimSpace(p), "{}")
				switch p {
				case "", "All", "all", "$__all", "*":
				default:
					out = append(out, p)
				}
			}
		case float64:
			out = append(out, strconv.FormatFloat(t, 'f', -1, 64))
		default:
			return fmt.Errorf("want a string, a number or a list of them, got %T", x)
		}
		return nil
	}
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if err := add(x); err != nil {
				return err
			}
		}
	} else if err := add(v); err != nil {
		return err
	}
	*s = out
	return nil
}

// ParseQuery reads one query of a request, with defaults.
func ParseQuery(dq backend.DataQuery) (Query, error) {
	var q Query
	if err := json.Unmarshal(dq.JSON, &q); err != nil {
		return q, fmt.Errorf("query model: %w", err)
	}
	if q.QueryType == "" {
		q.QueryType = dq.QueryType
	}
	if q.QueryType == "" {
		q.QueryType = QueryTypeSQL
	}
	if q.Format == "" {
		q.Format = FormatTable
	}
	switch q.QueryType {
	case QueryTypeSQL, QueryTypeFindings:
	default:
		return q, fmt.Errorf("queryType %q: want %q or %q", q.QueryType, QueryTypeSQL, QueryTypeFindings)
	}
	switch q.Format {
	case FormatTable, FormatTimeSeries:
	default:
		return q, fmt.Errorf("format %q: want %q or %q", q.Format, FormatTable, FormatTimeSeries)
	}
	return q, nil
}

// SQL is the text to send: the raw SQL with macros expanded, or the
// findings builder's query.
func (q Query) SQL(tr backend.TimeRange, interval time.Duration) (string, error) {
	ranks, err := q.rankInts()
	if err != nil {
		return "", err
	}
	if q.QueryType == QueryTypeFindings {
		return q.findingsSQL(ranks), nil
	}
	if strings.TrimSpace(q.RawSQL) == "" {
		return "", fmt.Errorf("empty query: write SQL in rawSql")
	}
	run := ""
	if len(q.Run) > 0 {
		run = q.Run[0]
	}
	return macros.Expand(q.RawSQL, macros.Context{From: tr.From, To: tr.To, Interval: interval, Run: run, Ranks: ranks})
}

func (q Query) rankInts() ([]int, error) {
	var out []int
	for _, s := range q.Ranks {
		r, err := strconv.Atoi(s)
		if err != nil {
			return nil, fmt.Errorf("ranks: %q is not a rank number", s)
		}
		out = append(out, r)
	}
	return out, nil
}

// FindingsColumns are what the findings builder returns, in order.
const FindingsColumns = "run_id, detector, category, severity, rank, host, step_lo, step_hi, subject, metric, value, threshold, message, fix"

func (q Query) findingsSQL(ranks []int) string {
	var where []string
	in := func(col string, vals []string) {
		if len(vals) == 0 {
			return
		}
		quoted := make([]string, len(vals))
		for i, v := range vals {
			quoted[i] = macros.Quote(v)
		}
		where = append(where, fmt.Sprintf("%s IN (%s)", col, strings.Join(quoted, ", ")))
	}
	in("run_id", q.Run)
	in("detector", q.Detector)
	in("category", q.Category)
	in("severity", q.Severity)
	if len(ranks) > 0 {
		parts := make([]string, len(ranks))
		for i, r := range ranks {
			parts[i] = strconv.Itoa(r)
		}
		// Run-level findings (no rank) concern every rank.
		where = append(where, "(rank IS NULL OR rank IN ("+strings.Join(parts, ", ")+"))")
	}
	sql := "SELECT " + FindingsColumns + " FROM findings"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	return sql + " ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'warn' THEN 1 ELSE 2 END, run_id, detector, rank NULLS FIRST, step_lo"
}

// runQuery answers one query of a QueryData request.
func (d *Datasource) runQuery(ctx context.Context, inst *instance, dq backend.DataQuery) backend.DataResponse {
	q, err := ParseQuery(dq)
	if err != nil {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	}
	sql, err := q.SQL(dq.TimeRange, dq.Interval)
	if err != nil {
		return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
	}
	limit := inst.settings.Limit()
	if q.RowLimit > 0 {
		limit = q.RowLimit
	}
	ctx, cancel := context.WithTimeout(ctx, inst.settings.Timeout())
	defer cancel()
	res, err := inst.client.Query(ctx, sql, limit)
	if err != nil {
		st, msg := describe(ctx, err, inst.settings)
		return backend.ErrDataResponseWithSource(st, backend.ErrorSourceDownstream, msg)
	}
	defer res.Release()
	frame, err := ToFrame(dq.RefID, res.Schema, res.Records)
	if err != nil {
		return backend.ErrDataResponseWithSource(backend.StatusInternal, backend.ErrorSourcePlugin, err.Error())
	}
	meta := &data.FrameMeta{ExecutedQueryString: sql}
	if res.Truncated {
		meta.Notices = append(meta.Notices, data.Notice{
			Severity: data.NoticeSeverityWarning,
			Text:     fmt.Sprintf("result cut at the row limit of %d rows; add filters or raise rowLimit", limit),
		})
	}
	if q.Format == FormatTimeSeries && q.QueryType == QueryTypeSQL {
		if frame, err = ToTimeSeries(frame); err != nil {
			return backend.ErrDataResponseWithSource(backend.StatusBadRequest, backend.ErrorSourceDownstream, err.Error())
		}
	} else {
		meta.PreferredVisualization = data.VisTypeTable
	}
	frame.Meta = meta
	return backend.DataResponse{Frames: data.Frames{frame}}
}
