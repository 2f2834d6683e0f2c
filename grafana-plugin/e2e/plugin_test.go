//go:build duckdb_arrow

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// demoRange covers the sample's trace (2023-04-28) and the detector pass
// recorded now.
func demoRange() backend.TimeRange {
	return backend.TimeRange{From: time.Date(2023, 1, 1, 0, 0, 0, 0, time.UTC), To: time.Now().Add(time.Hour)}
}

func frameOf(t *testing.T, resp *backend.QueryDataResponse, ref string) *data.Frame {
	t.Helper()
	r, ok := resp.Responses[ref]
	if !ok {
		t.Fatalf("no response for %s", ref)
	}
	if r.Error != nil {
		t.Fatalf("%s: %v", ref, r.Error)
	}
	if len(r.Frames) != 1 {
		t.Fatalf("%s: %d frames, want 1", ref, len(r.Frames))
	}
	return r.Frames[0]
}

func field(t *testing.T, f *data.Frame, name string) *data.Field {
	t.Helper()
	fld, _ := f.FieldByName(name)
	if fld == nil {
		t.Fatalf("frame %s has no field %s", f.Name, name)
	}
	return fld
}

func at(f *data.Field, i int) any {
	v, _ := f.ConcreteAt(i)
	return v
}

func TestQueryTableTypes(t *testing.T) {
	ctx := context.Background()
	resp := plug.query(ctx, t, demoDS(), demoRange(), map[string]any{
		"queryType": "sql", "format": "table",
		"rawSql": `SELECT run_id, world_size, start_ns, make_timestamp_ns(start_ns) AS started,
			1.25::DECIMAL(10,2) AS dec, DATE '2024-01-02' AS day, ['a','b'] AS list, sources
			FROM runs WHERE run_id = $__run`,
		"run": "demo",
	})
	f := frameOf(t, resp, "A")
	if f.Rows() != 1 {
		t.Fatalf("rows = %d, want 1", f.Rows())
	}
	if got := at(field(t, f, "world_size"), 0); got != int32(128) {
		t.Errorf("world_size = %#v, want int32 128", got)
	}
	start := at(field(t, f, "start_ns"), 0).(int64)
	if start != 1682725898079292000 {
		t.Errorf("start_ns = %d", start)
	}
	// The timestamp keeps every nanosecond of the BIGINT.
	if got := at(field(t, f, "started"), 0).(time.Time); got.UnixNano() != start {
		t.Errorf("started = %s (%d ns), want %d ns", got, got.UnixNano(), start)
	}
	if got := at(field(t, f, "dec"), 0); got != 1.25 {
		t.Errorf("DECIMAL = %#v, want float64 1.25", got)
	}
	if got := at(field(t, f, "day"), 0).(time.Time); !got.Equal(time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("DATE = %s", got)
	}
	if got := at(field(t, f, "list"), 0); got != `["a","b"]` {
		t.Errorf("list = %#v", got)
	}
	if got := at(field(t, f, "sources"), 0).(string); !strings.Contains(got, "rank-0.sampled.pt.trace.json.gz") {
		t.Errorf("sources = %q", got)
	}
	if f.Meta == nil || !strings.Contains(f.Meta.ExecutedQueryString, "run_id = 'demo'") {
		t.Errorf("executed query not recorded with $__run expanded: %+v", f.Meta)
	}
}

func TestQueryEnumIsDecoded(t *testing.T) {
	resp := plug.query(context.Background(), t, demoDS(), demoRange(), map[string]any{
		"rawSql": `SELECT severity::ENUM('info', 'warn', 'critical') AS sev, count(*) AS n FROM findings GROUP BY 1 ORDER BY 1`,
	})
	f := frameOf(t, resp, "A")
	got := map[string]int64{}
	for i := 0; i < f.Rows(); i++ {
		got[at(f.Fields[0], i).(string)] = at(f.Fields[1], i).(int64)
	}
	// what the store holds, asked directly (the detectors decide the counts)
	for _, sev := range []string{"critical", "warn", "info"} {
		if want := storeCount(t, "SELECT count(*) FROM findings WHERE severity = '"+sev+"'"); got[sev] != want || want == 0 {
			t.Errorf("findings by severity = %v; the store has %d %s", got, want, sev)
		}
	}
}

func TestQueryTimeSeries(t *testing.T) {
	resp := plug.query(context.Background(), t, demoDS(), demoRange(), map[string]any{
		"format": "time_series", "run": "demo", "ranks": "0,1",
		"rawSql": `SELECT make_timestamp_ns(start_ns) AS time, rank, (end_ns - start_ns) / 1e6 AS step_ms
			FROM steps WHERE run_id = $__run AND rank IN $__ranks ORDER BY rank DESC`,
	}, map[string]any{
		"format": "time_series",
		"rawSql": `SELECT $__timeGroup(start_ns, '1s') AS time, count(*)::DOUBLE AS steps FROM steps WHERE run_id = 'demo' AND $__timeFilter(start_ns) GROUP BY 1`,
	})
	f := frameOf(t, resp, "A")
	if f.TimeSeriesSchema().Type != data.TimeSeriesTypeWide {
		t.Fatalf("not a wide time series: %s", f.TimeSeriesSchema().Type)
	}
	series := map[string]*data.Field{}
	for _, fl := range f.Fields[1:] {
		series[fl.Labels["rank"]] = fl
	}
	if len(series) != 2 || series["0"] == nil || series["1"] == nil {
		t.Fatalf("series by rank label = %v, want ranks 0 and 1", f.Fields)
	}
	times := f.Fields[0]
	for i := 1; i < times.Len(); i++ {
		if at(times, i-1).(time.Time).After(at(times, i).(time.Time)) {
			t.Fatalf("times not sorted: %v", times)
		}
	}
	if first := at(times, 0).(time.Time); first.UnixNano() != 1682725898079292000 {
		t.Errorf("first time = %d ns, want rank 0's first step start", first.UnixNano())
	}
	// The bucketed query: one 1 s bucket holds all 4 steps' starts.
	g := frameOf(t, resp, "B")
	var total float64
	for i := 0; i < g.Rows(); i++ {
		if v, ok := g.Fields[1].ConcreteAt(i); ok {
			total += v.(float64)
		}
	}
	if total != 4 {
		t.Errorf("steps counted over buckets = %v, want 4", total)
	}
}

func TestFindingsBuilder(t *testing.T) {
	resp := plug.query(context.Background(), t, demoDS(), demoRange(),
		map[string]any{"queryType": "findings", "run": "demo"},
		map[string]any{"queryType": "findings", "run": "demo", "detector": []any{"comm_exposed_ratio"}, "ranks": []any{1}},
		map[string]any{"queryType": "findings", "run": "$__all", "severity": "critical,warn", "category": "communication"},
	)
	all := frameOf(t, resp, "A")
	if want := storeCount(t, "SELECT count(*) FROM findings WHERE run_id = 'demo'"); int64(all.Rows()) != want {
		t.Errorf("findings of demo = %d, the store has %d", all.Rows(), want)
	}
	if got := at(field(t, all, "severity"), 0); got != "critical" {
		t.Errorf("first finding severity = %v, want critical (worst first)", got)
	}
	one := frameOf(t, resp, "B")
	if one.Rows() != 1 {
		t.Fatalf("comm_exposed_ratio rank 1 rows = %d, want 1", one.Rows())
	}
	// the value as the detector stored it (transfer not hidden by compute,
	// waits for late ranks left out), not recomputed
	var want float64
	if err := store.Conn().QueryRowContext(context.Background(),
		"SELECT value FROM findings WHERE run_id = 'demo' AND detector = 'comm_exposed_ratio' AND rank = 1").Scan(&want); err != nil {
		t.Fatal(err)
	}
	if v := at(field(t, one, "value"), 0).(float64); v != want || v < 0.10 {
		t.Errorf("rank 1 exposed ratio = %v, want the store's %v (over the 10%% threshold)", v, want)
	}
	if r := at(field(t, one, "rank"), 0); r != int32(1) {
		t.Errorf("rank = %#v", r)
	}
	comm := frameOf(t, resp, "C")
	// demo: comm_exposed_ratio x2 (critical), straggler_rank (warn);
	// throttled: straggler_rank on rank 3 (warn)
	if want := storeCount(t, "SELECT count(*) FROM findings WHERE severity IN ('critical', 'warn') AND category = 'communication'"); int64(comm.Rows()) != want || want != 4 {
		t.Errorf("critical+warn communication findings = %d, the store has %d, want 4", comm.Rows(), want)
	}
}

func TestPerQueryErrors(t *testing.T) {
	resp := plug.query(context.Background(), t, demoDS(), demoRange(),
		map[string]any{"refId": "ok", "rawSql": "SELECT 42 AS answer"},
		map[string]any{"refId": "syntax", "rawSql": "SELEC 1"},
		map[string]any{"refId": "write", "rawSql": "DELETE FROM findings"},
		map[string]any{"refId": "table", "rawSql": "SELECT * FROM nope"},
		map[string]any{"refId": "macro", "rawSql": "SELECT $__timeGroup(ts) FROM counters"},
		map[string]any{"refId": "norun", "rawSql": "SELECT * FROM runs WHERE run_id = $__run"},
		map[string]any{"refId": "ts", "format": "time_series", "rawSql": "SELECT 1 AS x"},
	)
	if v := at(frameOf(t, resp, "ok").Fields[0], 0); v != int32(42) {
		t.Errorf("ok = %#v", v)
	}
	for ref, want := range map[string]string{
		"syntax": "syntax error",
		"write":  "server refused: DELETE",
		"table":  "nope",
		"macro":  "$__timeGroup: takes a column and an interval",
		"norun":  "$__run: no run chosen",
		"ts":     "time series format needs a time column",
	} {
		r := resp.Responses[ref]
		if r.Error == nil || !strings.Contains(r.Error.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", ref, r.Error, want)
		}
	}
}

func TestRowLimit(t *testing.T) {
	ds := demoDS()
	ds.id, ds.jsonData["rowLimit"] = 2, 5000
	resp := plug.query(context.Background(), t, ds, demoRange(),
		map[string]any{"rawSql": "SELECT i FROM range(100000) t(i)"},
		map[string]any{"rawSql": "SELECT i FROM range(100000) t(i)", "rowLimit": 10},
		map[string]any{"rawSql": "SELECT i FROM range(300) t(i)"},
	)
	for ref, want := range map[string]int{"A": 5000, "B": 10, "C": 300} {
		f := frameOf(t, resp, ref)
		if f.Rows() != want {
			t.Errorf("%s: %d rows, want %d", ref, f.Rows(), want)
		}
		truncated := f.Meta != nil && len(f.Meta.Notices) > 0
		if truncated != (ref != "C") {
			t.Errorf("%s: truncation notice %v, want %v", ref, f.Meta.Notices, ref != "C")
		}
	}
}

func TestTimeoutAndCancel(t *testing.T) {
	slow := map[string]any{"rawSql": "SELECT sum(a.i * b.i) AS s FROM range(200000) a(i), range(200000) b(i)"}
	ds := demoDS()
	ds.id, ds.jsonData["timeoutSeconds"] = 3, 1
	t0 := time.Now()
	resp := plug.query(context.Background(), t, ds, demoRange(), slow)
	if r := resp.Responses["A"]; r.Error == nil || !strings.Contains(r.Error.Error(), "timed out after 1s") {
		t.Errorf("slow query: %v, want a timeout", r.Error)
	}
	if d := time.Since(t0); d > 10*time.Second {
		t.Errorf("timeout took %s", d)
	}

	// Grafana cancels the request (the user left the dashboard): the
	// call returns promptly.
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	t0 = time.Now()
	got, err := plug.data.QueryData(ctx, backend.ToProto().QueryDataRequest(&backend.QueryDataRequest{
		PluginContext: demoDS().pluginContext(),
		Queries:       []backend.DataQuery{{RefID: "A", TimeRange: demoRange(), JSON: []byte(`{"rawSql":"SELECT sum(a.i * b.i) FROM range(200000) a(i), range(200000) b(i)"}`)}},
	}))
	// the call fails, or (when the plugin answers before the deadline
	// reaches the transport) the query carries the cancellation as its error
	if err == nil && (got == nil || got.Responses["A"] == nil || got.Responses["A"].Error == "") {
		t.Errorf("cancelled request succeeded: %v", got)
	}
	if d := time.Since(t0); d > 5*time.Second {
		t.Errorf("cancel took %s", d)
	}
	// The server is still fine afterwards.
	resp = plug.query(context.Background(), t, demoDS(), demoRange(), map[string]any{"rawSql": "SELECT count(*) AS n FROM runs"})
	if n := at(frameOf(t, resp, "A").Fields[0], 0); n != int64(2) { // demo and throttled
		t.Errorf("runs after cancel = %v", n)
	}
}

func TestCheckHealth(t *testing.T) {
	ctx := context.Background()
	ok := plug.health(ctx, t, demoDS())
	if ok.Status != backend.HealthStatusOk || !strings.Contains(ok.Message, fmt.Sprintf("%d runs, %d findings", storeCount(t, "SELECT count(*) FROM runs"), storeCount(t, "SELECT count(*) FROM findings"))) {
		t.Errorf("healthy store: %v %q", ok.Status, ok.Message)
	}
	for _, c := range []struct {
		name string
		ds   dsConfig
		want string
	}{
		{"no address", dsConfig{id: 10, jsonData: map[string]any{}}, "jsonData.address: empty"},
		{"unreachable", dsConfig{id: 11, jsonData: map[string]any{"address": "127.0.0.1:1", "timeoutSeconds": 5}}, "server unreachable at 127.0.0.1:1: connection refused"},
		{"tls to plain", dsConfig{id: 12, jsonData: map[string]any{"address": "grpc+tls://" + flightAddr, "timeoutSeconds": 5}}, "TLS: " + flightAddr + " does not speak TLS"},
		{"bad CA", dsConfig{id: 13, jsonData: map[string]any{"address": flightAddr, "tls": true}, secure: map[string]string{"tlsCACert": "not a pem"}}, "tlsCACert: no PEM certificate"},
	} {
		r := plug.health(ctx, t, c.ds)
		if r.Status != backend.HealthStatusError || !strings.Contains(r.Message, c.want) {
			t.Errorf("%s: %v %q, want error containing %q", c.name, r.Status, r.Message, c.want)
		}
	}
}

func TestResources(t *testing.T) {
	ctx := context.Background()
	type opt struct{ Text, Value string }
	var runs, ranks, hosts, dets, sevs []opt
	plug.resource(ctx, t, demoDS(), "runs", &runs)
	// newest first (by start)
	if len(runs) != 2 || runs[0] != (opt{"throttled", "throttled"}) || runs[1] != (opt{"demo", "demo"}) {
		t.Errorf("runs = %+v", runs)
	}
	plug.resource(ctx, t, demoDS(), "ranks?run=demo", &ranks)
	if len(ranks) != 2 || ranks[0] != (opt{"0 (demo-node)", "0"}) || ranks[1].Value != "1" {
		t.Errorf("ranks = %+v", ranks)
	}
	plug.resource(ctx, t, demoDS(), "hosts?run=demo", &hosts)
	if len(hosts) != 1 || hosts[0].Value != "demo-node" {
		t.Errorf("hosts = %+v", hosts)
	}
	plug.resource(ctx, t, demoDS(), "detectors?run=demo", &dets)
	found := map[string]bool{}
	for _, d := range dets {
		found[d.Value] = true
	}
	for _, want := range []string{"straggler_rank", "comm_exposed_ratio", "gpu_idle", "temporal_breakdown", "top_kernels"} {
		if !found[want] {
			t.Errorf("detectors lack %s: %+v", want, dets)
		}
	}
	plug.resource(ctx, t, demoDS(), "severities?run=demo", &sevs)
	if len(sevs) != 3 || sevs[0].Value != "critical" || sevs[2].Value != "info" {
		t.Errorf("severities = %+v, want critical, warn, info", sevs)
	}
	var none []opt
	plug.resource(ctx, t, demoDS(), "ranks?run=nosuchrun", &none)
	if len(none) != 0 {
		t.Errorf("ranks of an unknown run = %+v", none)
	}
	var errBody map[string]string
	if code := plug.resource(ctx, t, demoDS(), "nope", &errBody); code != 404 || !strings.Contains(errBody["error"], "have categories, detectors") {
		t.Errorf("unknown resource: %d %v", code, errBody)
	}
}

// storeCount runs a count query on the demo store itself.
func storeCount(t *testing.T, q string) int64 {
	t.Helper()
	var n int64
	if err := store.Conn().QueryRowContext(context.Background(), q).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
