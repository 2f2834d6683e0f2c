package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// RequiredSchema is every table and column the builder, the provisioned
// dashboards and the alert rules read. A store without one of them is from
// another trainscope version, and the health check says which.
var RequiredSchema = map[string][]string{
	"runs":     {"run_id", "model", "world_size", "gpu_type", "start_ns", "end_ns"},
	"ranks":    {"run_id", "rank", "host", "gpu_name"},
	"steps":    {"run_id", "rank", "step", "start_ns", "end_ns"},
	"findings": strings.Split(strings.ReplaceAll(FindingsColumns, " ", ""), ","),
	"metrics":  {"run_id", "detector", "rank", "step_lo", "step_hi", "subject", "metric", "value"},
	"analyses": {"run_id", "analyzed_ns", "findings", "took_ms"},
}

// CheckHealth connects, checks the schema and counts runs. Each failure
// names its kind first: settings, server unreachable, TLS,
// authentication, schema mismatch.
func (d *Datasource) CheckHealth(ctx context.Context, req *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	fail := func(msg string) (*backend.CheckHealthResult, error) {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: msg}, nil
	}
	inst, err := d.instance(ctx, req.PluginContext)
	if err != nil {
		return fail(err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, inst.settings.Timeout())
	defer cancel()

	res, err := inst.client.Query(ctx, `SELECT table_name, column_name FROM duckdb_columns() WHERE schema_name = 'main'`, 0)
	if err != nil {
		_, msg := classify(ctx, err, inst.settings)
		return fail(msg)
	}
	cols, err := ToFrame("columns", res.Schema, res.Records)
	res.Release()
	if err != nil {
		return fail(fmt.Sprintf("reading the catalog of %s: %v", inst.settings.Address, err))
	}
	have := map[string]map[string]bool{}
	for i := 0; i < cols.Rows(); i++ {
		t, _ := cols.Fields[0].ConcreteAt(i)
		c, _ := cols.Fields[1].ConcreteAt(i)
		table, _ := t.(string)
		if have[table] == nil {
			have[table] = map[string]bool{}
		}
		col, _ := c.(string)
		have[table][col] = true
	}
	if problems := schemaProblems(have); len(problems) > 0 {
		return fail(fmt.Sprintf("schema mismatch: %s at %s is not the trainscope schema this plugin reads: %s (upgrade the server or the plugin so their versions match)",
			"the store", inst.settings.Address, strings.Join(problems, "; ")))
	}

	res, err = inst.client.Query(ctx, `SELECT (SELECT count(*) FROM runs) AS runs, (SELECT count(*) FROM findings) AS findings, version() AS duckdb`, 0)
	if err != nil {
		_, msg := classify(ctx, err, inst.settings)
		return fail(msg)
	}
	defer res.Release()
	frame, err := ToFrame("health", res.Schema, res.Records)
	if err != nil || frame.Rows() != 1 {
		return fail(fmt.Sprintf("unexpected answer to the health query: %v", err))
	}
	runs, _ := frame.Fields[0].ConcreteAt(0)
	findings, _ := frame.Fields[1].ConcreteAt(0)
	version, _ := frame.Fields[2].ConcreteAt(0)
	return &backend.CheckHealthResult{
		Status:  backend.HealthStatusOk,
		Message: fmt.Sprintf("trainscope at %s: %v runs, %v findings (DuckDB %v)", inst.settings.Address, runs, findings, version),
	}, nil
}

func schemaProblems(have map[string]map[string]bool) []string {
	var problems []string
	tables := make([]string, 0, len(RequiredSchema))
	for t := range RequiredSchema {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	for _, t := range tables {
		cols, ok := have[t]
		if !ok {
			problems = append(problems, "no table "+t)
			continue
		}
		var missing []string
		for _, c := range RequiredSchema[t] {
			if !cols[c] {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			problems = append(problems, fmt.Sprintf("table %s lacks %s", t, strings.Join(missing, ", ")))
		}
	}
	return problems
}
