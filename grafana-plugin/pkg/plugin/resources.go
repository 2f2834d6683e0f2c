package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/trainscope/trainscope/grafana-plugin/pkg/macros"
)

// Option is one choice of a template variable or query editor list.
type Option struct {
	Text  string `json:"text"`
	Value string `json:"value"`
}

// resource is one GET path: the query for its options given the URL
// filters (run, detector), and whether it honours them.
type resource struct {
	sql func(f filters) string
	doc string
}

type filters struct{ runs, detectors []string }

func (f filters) where(clauses ...string) string {
	var w []string
	for _, c := range clauses {
		if c != "" {
			w = append(w, c)
		}
	}
	if len(w) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w, " AND ")
}

func inList(col string, vals []string) string {
	if len(vals) == 0 {
		return ""
	}
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = macros.Quote(v)
	}
	return col + " IN (" + strings.Join(q, ", ") + ")"
}

// Resources are the CallResource paths, each answering GET with a JSON
// list of options. Filters: ?run=a,b and ?detector=x (where they apply).
var Resources = map[string]resource{
	"runs": {doc: "runs, newest first", sql: func(filters) string {
		return "SELECT run_id AS value, run_id || coalesce(' (' || model || ', ' || world_size || ' ranks)', '') AS text FROM runs ORDER BY start_ns DESC NULLS LAST, run_id"
	}},
	"hosts": {doc: "hosts of the runs", sql: func(f filters) string {
		return "SELECT DISTINCT host AS value, host AS text FROM ranks" + f.where(inList("run_id", f.runs)) + " ORDER BY 1"
	}},
	"ranks": {doc: "ranks of the runs, with their host", sql: func(f filters) string {
		return "SELECT DISTINCT rank::VARCHAR AS value, rank::VARCHAR || ' (' || host || ')' AS text, rank FROM ranks" + f.where(inList("run_id", f.runs)) + " ORDER BY rank"
	}},
	"detectors": {doc: "detectors with findings or metrics", sql: func(f filters) string {
		return "SELECT DISTINCT detector AS value, detector AS text FROM (SELECT run_id, detector FROM findings UNION ALL SELECT run_id, detector FROM metrics)" + f.where(inList("run_id", f.runs)) + " ORDER BY 1"
	}},
	"categories": {doc: "finding categories", sql: func(f filters) string {
		return "SELECT DISTINCT category AS value, category AS text FROM findings" + f.where(inList("run_id", f.runs), inList("detector", f.detectors)) + " ORDER BY 1"
	}},
	"severities": {doc: "finding severities, worst first", sql: func(f filters) string {
		return "SELECT DISTINCT severity AS value, severity AS text, CASE severity WHEN 'critical' THEN 0 WHEN 'warn' THEN 1 ELSE 2 END AS o FROM findings" + f.where(inList("run_id", f.runs)) + " ORDER BY o"
	}},
	"metrics": {doc: "metric names of the metrics table", sql: func(f filters) string {
		return "SELECT DISTINCT metric AS value, detector || '.' || metric AS text FROM metrics" + f.where(inList("run_id", f.runs), inList("detector", f.detectors)) + " ORDER BY 2"
	}},
}

// CallResource answers GET <path>?run=..&detector=.. with options.
func (d *Datasource) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	reply := func(code int, v any) error {
		body, err := json.Marshal(v)
		if err != nil {
			return err
		}
		return sender.Send(&backend.CallResourceResponse{
			Status:  code,
			Headers: map[string][]string{"Content-Type": {"application/json"}},
			Body:    body,
		})
	}
	path := strings.Trim(req.Path, "/")
	r, ok := Resources[path]
	if !ok {
		names := make([]string, 0, len(Resources))
		for n := range Resources {
			names = append(names, n)
		}
		sort.Strings(names)
		return reply(http.StatusNotFound, map[string]string{"error": fmt.Sprintf("no resource %q; have %s", path, strings.Join(names, ", "))})
	}
	if req.Method != "" && req.Method != http.MethodGet {
		return reply(http.StatusMethodNotAllowed, map[string]string{"error": "resources answer GET only"})
	}
	inst, err := d.instance(ctx, req.PluginContext)
	if err != nil {
		return reply(http.StatusBadRequest, map[string]string{"error": err.Error()})
	}
	u, err := url.Parse(req.URL)
	if err != nil {
		return reply(http.StatusBadRequest, map[string]string{"error": "bad URL: " + err.Error()})
	}
	f := filters{runs: splitParam(u.Query()["run"]), detectors: splitParam(u.Query()["detector"])}
	ctx, cancel := context.WithTimeout(ctx, inst.settings.Timeout())
	defer cancel()
	res, err := inst.client.Query(ctx, r.sql(f), 10000)
	if err != nil {
		_, msg := classify(ctx, err, inst.settings)
		return reply(http.StatusBadGateway, map[string]string{"error": msg})
	}
	defer res.Release()
	frame, err := ToFrame(path, res.Schema, res.Records)
	if err != nil {
		return reply(http.StatusInternalServerError, map[string]string{"error": err.Error()})
	}
	opts := make([]Option, 0, frame.Rows())
	for i := 0; i < frame.Rows(); i++ {
		v, _ := frame.Fields[0].ConcreteAt(i)
		t, _ := frame.Fields[1].ConcreteAt(i)
		o := Option{Value: fmt.Sprint(v), Text: fmt.Sprint(t)}
		if t == nil {
			o.Text = o.Value
		}
		opts = append(opts, o)
	}
	return reply(http.StatusOK, opts)
}

func splitParam(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, p := range strings.Split(v, ",") {
			p = strings.Trim(strings.TrimSpace(p), "{}")
			if p != "" && p != "All" && p != "$__all" && p != "*" {
				out = append(out, p)
			}
		}
	}
	return out
}
