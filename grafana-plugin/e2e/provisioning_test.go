//go:build duckdb_arrow

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"go.yaml.in/yaml/v3"
)

const grafanaDir = "../../deploy/grafana"

// demoVars are the template variable values a user of the demo would pick
// ("All" for the multi-value ones).
var demoVars = map[string][]string{
	"run":      {"demo"},
	"host":     {"demo-node"},
	"rank":     {"0", "1"},
	"detector": nil, // filled from the detectors resource
	"category": {"communication", "memory_ops", "summary", "utilization"},
	"severity": {"critical", "warn", "info"},
}

var varRE = regexp.MustCompile(`\$\{(\w+)(?::(\w+))?\}|\$(\w+)`)

// interpolate does what Grafana's template service does for ${v}, $v,
// ${v:csv} and ${v:sqlstring}.
func interpolate(t *testing.T, s string) string {
	return varRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := varRE.FindStringSubmatch(m)
		name, format := sub[1], sub[2]
		if name == "" {
			name = sub[3]
		}
		vals, ok := demoVars[name]
		if !ok {
			return m // a macro ($__run) or Grafana's own ($__interval)
		}
		switch format {
		case "sqlstring":
			q := make([]string, len(vals))
			for i, v := range vals {
				q[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
			}
			return strings.Join(q, ",")
		case "csv", "":
			return strings.Join(vals, ",")
		}
		t.Fatalf("variable format %s in %s not handled by the test", format, m)
		return m
	})
}

func interpolateModel(t *testing.T, m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if s, ok := v.(string); ok {
			v = interpolate(t, s)
		}
		out[k] = v
	}
	return out
}

type dashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string         `json:"name"`
			Type       string         `json:"type"`
			Datasource map[string]any `json:"datasource"`
			Query      map[string]any `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Annotations struct {
		List []struct {
			Name   string         `json:"name"`
			Target map[string]any `json:"target"`
		} `json:"list"`
	} `json:"annotations"`
	Panels []struct {
		ID         int              `json:"id"`
		Title      string           `json:"title"`
		Type       string           `json:"type"`
		Datasource map[string]any   `json:"datasource"`
		Targets    []map[string]any `json:"targets"`
	} `json:"panels"`
}

// emptyOnDemo are panels whose data the sample cannot have: no memory
// snapshot or profile_memory, no NVML agent, and the sample is loaded
// directly rather than through JetStream.
var emptyOnDemo = map[string]bool{
	"GPU memory reserved but unused per run (GiB)": true,
	"Ingestion by run": true,
	// hardware counters: checked on the throttled run instead
	"SM clock per GPU":               true,
	"Power per GPU":                  true,
	"Temperature per GPU":            true,
	"Clock throttle reasons per GPU": true,
	"GPU counters per rank":          true,
	// the demo run (HTA's sampled pair) is balanced: no rank holds the
	// other up by 5% of a step
	"Root causes (the report's headline first)": true,
}

func TestProvisionedDatasource(t *testing.T) {
	var cfg struct {
		Datasources []struct {
			Name, UID, Type string
			JSONData        map[string]any `yaml:"jsonData"`
		}
	}
	readYAML(t, filepath.Join(grafanaDir, "provisioning/datasources/trainscope.yaml"), &cfg)
	if len(cfg.Datasources) != 1 || cfg.Datasources[0].Type != pluginID || cfg.Datasources[0].UID != "trainscope" {
		t.Fatalf("datasources = %+v", cfg.Datasources)
	}
	var pj struct {
		ID         string `json:"id"`
		Backend    bool   `json:"backend"`
		Alerting   bool   `json:"alerting"`
		Executable string `json:"executable"`
	}
	b, err := os.ReadFile("../src/plugin.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pj); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^[0-9a-z]+-([0-9a-z]+-)?datasource$`).MatchString(pj.ID) || pj.ID != pluginID || !pj.Backend || !pj.Alerting || pj.Executable != "gpx_trainscope" {
		t.Errorf("plugin.json = %+v", pj)
	}
}

func TestProvisionedDashboards(t *testing.T) {
	ctx := context.Background()
	var dets []struct{ Value string }
	plug.resource(ctx, t, demoDS(), "detectors?run=demo", &dets)
	demoVars["detector"] = nil
	for _, d := range dets {
		demoVars["detector"] = append(demoVars["detector"], d.Value)
	}
	files := dashboardFiles(t)
	if len(files) != 3 {
		t.Fatalf("dashboards: %v, want 3", files)
	}
	panels := 0
	for _, file := range files {
		d := readDashboard(t, file)
		for _, v := range d.Templating.List {
			if v.Datasource["uid"] != "trainscope" || v.Type != "query" {
				t.Errorf("%s: variable %s: datasource %v type %s", file, v.Name, v.Datasource, v.Type)
				continue
			}
			res, _ := v.Query["resource"].(string)
			path := res
			if run, _ := v.Query["run"].(string); run != "" {
				path += "?run=" + interpolate(t, run)
			}
			var opts []struct{ Text, Value string }
			if code := plug.resource(ctx, t, demoDS(), path, &opts); code != 200 || len(opts) == 0 {
				t.Errorf("%s: variable %s (%s): status %d, %d options", file, v.Name, path, code, len(opts))
			}
		}
		for _, p := range d.Panels {
			if p.Datasource["uid"] != "trainscope" || p.Datasource["type"] != pluginID {
				t.Errorf("%s: panel %q: datasource %v", file, p.Title, p.Datasource)
			}
			for _, tgt := range p.Targets {
				panels++
				resp := plug.query(ctx, t, demoDS(), demoRange(), interpolateModel(t, tgt))
				r := resp.Responses[tgt["refId"].(string)]
				if r.Error != nil {
					t.Errorf("%s: panel %q: %v", filepath.Base(file), p.Title, r.Error)
					continue
				}
				rows := 0
				for _, f := range r.Frames {
					if n, _ := f.RowLen(); n > rows {
						rows = n
					}
				}
				if rows == 0 && !emptyOnDemo[p.Title] {
					t.Errorf("%s: panel %q: no rows on the demo run", filepath.Base(file), p.Title)
				}
				if rows > 0 && emptyOnDemo[p.Title] {
					t.Errorf("%s: panel %q: has rows now; take it off emptyOnDemo", filepath.Base(file), p.Title)
				}
				t.Logf("%s / %s: %d rows", d.UID, p.Title, rows)
			}
		}
	}
	if panels < 20 {
		t.Errorf("ran %d panel queries", panels)
	}
	checkHardwarePanels(t)
}

// Grafana pointed at the query node sees what it sees on an ingestor: every
// panel of every dashboard returns as many rows over the fleet archive as
// over the store the runs were analysed in, but for the panels over an
// ingestor's own ledger (ingested_batches), which the archive does not
// hold.
func TestProvisionedDashboardsOverTheArchive(t *testing.T) {
	ctx := context.Background()
	compared := 0
	for _, file := range dashboardFiles(t) {
		d := readDashboard(t, file)
		for _, p := range d.Panels {
			for _, tgt := range p.Targets {
				ingestorOnly := strings.Contains(fmt.Sprint(tgt["rawSql"]), "ingested_batches")
				rows := map[string]int{}
				for name, ds := range map[string]dsConfig{"store": demoDS(), "archive": archiveDS()} {
					resp := plug.query(ctx, t, ds, demoRange(), interpolateModel(t, tgt))
					r := resp.Responses[tgt["refId"].(string)]
					if r.Error != nil {
						if !(ingestorOnly && name == "archive") {
							t.Errorf("%s: panel %q over the %s: %v", filepath.Base(file), p.Title, name, r.Error)
						}
						continue
					}
					for _, f := range r.Frames {
						if n, _ := f.RowLen(); n > rows[name] {
							rows[name] = n
						}
					}
				}
				if !ingestorOnly && rows["store"] != rows["archive"] {
					t.Errorf("%s: panel %q: %d rows over the store, %d over the archive", filepath.Base(file), p.Title, rows["store"], rows["archive"])
				}
				if rows["store"] > 0 && !ingestorOnly {
					compared++
				}
			}
		}
	}
	if compared < 20 {
		t.Errorf("only %d panels with rows compared", compared)
	}
}

// dashboardFiles are the provisioned dashboards' JSON files.
func dashboardFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(grafanaDir, "dashboards/*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// readDashboard decodes one provisioned dashboard.
func readDashboard(t *testing.T, file string) dashboard {
	t.Helper()
	var d dashboard
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return d
}

// checkHardwarePanels runs the run dashboard's GPU counter panels and its
// annotations on the throttled run (bench/throttled8: rank 3's GPU drops
// its clock 30%): each has rows, and the annotation names rank 3.
func checkHardwarePanels(t *testing.T) {
	ctx := context.Background()
	saved := map[string][]string{}
	for k, v := range demoVars {
		saved[k] = v
	}
	defer func() { demoVars = saved }()
	demoVars["run"], demoVars["host"] = []string{"throttled"}, []string{"node-a"}
	demoVars["rank"] = []string{"0", "1", "2", "3", "4", "5", "6", "7"}
	var d dashboard
	b, err := os.ReadFile(filepath.Join(grafanaDir, "dashboards/run-drilldown.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	rowsOf := func(tgt map[string]any) (int, []string) {
		resp := plug.query(ctx, t, demoDS(), demoRange(), interpolateModel(t, tgt))
		r := resp.Responses[tgt["refId"].(string)]
		if r.Error != nil {
			t.Errorf("%v", r.Error)
			return 0, nil
		}
		rows := 0
		var text []string
		for _, f := range r.Frames {
			n, _ := f.RowLen()
			rows = max(rows, n)
			if fld, _ := f.FieldByName("text"); fld != nil {
				for i := range fld.Len() {
					if v, ok := fld.ConcreteAt(i); ok {
						text = append(text, fmt.Sprint(v))
					}
				}
			}
		}
		return rows, text
	}
	hardware := 0
	for _, p := range d.Panels {
		if !strings.Contains(p.Title, "GPU") || !emptyOnDemo[p.Title] {
			continue
		}
		for _, tgt := range p.Targets {
			hardware++
			if n, _ := rowsOf(tgt); n == 0 {
				t.Errorf("panel %q: no rows on the throttled run", p.Title)
			}
		}
	}
	if hardware != 5 {
		t.Errorf("checked %d hardware panels, want 5", hardware)
	}
	if len(d.Annotations.List) != 1 {
		t.Fatalf("annotations %+v", d.Annotations.List)
	}
	_, text := rowsOf(d.Annotations.List[0].Target)
	if len(text) != 1 || !strings.HasPrefix(text[0], "gpu_throttle on rank 3: ") {
		t.Errorf("annotations on the throttled run: %q, want gpu_throttle on rank 3", text)
	}
}

// alertRules is Grafana's alert rule provisioning format, the parts read.
type alertRules struct {
	Groups []struct {
		Name  string
		Rules []struct {
			UID, Title, Condition string
			NoDataState           string `yaml:"noDataState"`
			Data                  []struct {
				RefID             string                   `yaml:"refId"`
				DatasourceUID     string                   `yaml:"datasourceUid"`
				RelativeTimeRange struct{ From, To int64 } `yaml:"relativeTimeRange"`
				Model             map[string]any
			}
			Labels map[string]string
		}
	}
}

func TestProvisionedAlertRules(t *testing.T) {
	var cfg alertRules
	readYAML(t, filepath.Join(grafanaDir, "provisioning/alerting/trainscope-rules.yaml"), &cfg)
	// Which series each rule fires for on the demo run and the throttled
	// one (run/rank): there rank 3 arrives last, and every rank's GPU
	// idles between its steps (the generator leaves a quarter of each
	// step empty)
	want := map[string][]string{
		"trainscope-straggler":    {"demo/0", "throttled/3"},
		"trainscope-comm-exposed": {"demo/0", "demo/1"},
		"trainscope-gpu-idle": {"demo/0", "demo/1", "throttled/0", "throttled/1", "throttled/2", "throttled/3",
			"throttled/4", "throttled/5", "throttled/6", "throttled/7"},
		"trainscope-memory-waste": nil,
		"trainscope-mem-oom":      nil,
		"trainscope-hang":         nil,
		"trainscope-low-mfu":      {"demo/0", "demo/1"},
		"trainscope-gpu-throttle": {"throttled/3"},
		"trainscope-gpu-xid":      nil,
		// one run per GPU: no node has three bad runs
		"trainscope-node-reputation": nil,
	}
	seen := 0
	for _, g := range cfg.Groups {
		for _, r := range g.Rules {
			seen++
			w, ok := want[r.UID]
			if !ok {
				t.Errorf("rule %s (%s) has no expectation here", r.UID, r.Title)
				continue
			}
			got, err := evalRule(t, r.Condition, r.Data)
			if err != nil {
				t.Errorf("rule %s: %v", r.UID, err)
				continue
			}
			if fmt.Sprint(got) != fmt.Sprint(w) && !(len(got) == 0 && len(w) == 0) {
				t.Errorf("rule %s fires for %v, want %v", r.UID, got, w)
			}
		}
	}
	if seen != len(want) {
		t.Errorf("%d rules, want %d", seen, len(want))
	}
}

// evalRule runs the rule's data source query as Grafana's alerting would
// (its relative time range ending now), checks that the result is what
// alerting reads as numbers with labels, and applies the threshold.
func evalRule(t *testing.T, condition string, steps []struct {
	RefID             string                   `yaml:"refId"`
	DatasourceUID     string                   `yaml:"datasourceUid"`
	RelativeTimeRange struct{ From, To int64 } `yaml:"relativeTimeRange"`
	Model             map[string]any
}) ([]string, error) {
	var values map[string]float64 // labels -> value of query A
	var firing []string
	refs := map[string]bool{}
	for _, s := range steps {
		refs[s.RefID] = true
		switch s.DatasourceUID {
		case "trainscope":
			now := time.Now()
			tr := backend.TimeRange{From: now.Add(-time.Duration(s.RelativeTimeRange.From) * time.Second), To: now.Add(-time.Duration(s.RelativeTimeRange.To) * time.Second)}
			resp := plug.query(context.Background(), t, demoDS(), tr, s.Model)
			r := resp.Responses[s.RefID]
			if r.Error != nil {
				return nil, r.Error
			}
			var err error
			if values, err = numbersWithLabels(r.Frames); err != nil {
				return nil, err
			}
		case "__expr__":
			if s.Model["type"] != "threshold" || !refs[fmt.Sprint(s.Model["expression"])] {
				return nil, fmt.Errorf("step %s: want a threshold on an earlier step, got %v", s.RefID, s.Model)
			}
			conds := s.Model["conditions"].([]any)
			ev := conds[0].(map[string]any)["evaluator"].(map[string]any)
			limit := toFloat(ev["params"].([]any)[0])
			for labels, v := range values {
				if (ev["type"] == "gt" && v > limit) || (ev["type"] == "lt" && v < limit) {
					firing = append(firing, labels)
				}
			}
		default:
			return nil, fmt.Errorf("step %s: datasource %q is neither trainscope nor __expr__", s.RefID, s.DatasourceUID)
		}
	}
	if !refs[condition] {
		return nil, fmt.Errorf("condition %s is no step", condition)
	}
	sort.Strings(firing)
	return firing, nil
}

// numbersWithLabels reads frames the way Grafana's alerting reads a table
// (no time column): exactly one numeric column, every other column a
// string that becomes a label, one row per label set. It returns
// "run/rank" -> value and checks the labels run, rank, host, detector.
func numbersWithLabels(frames data.Frames) (map[string]float64, error) {
	out := map[string]float64{}
	for _, f := range frames {
		var num *data.Field
		var labels []*data.Field
		for _, fl := range f.Fields {
			switch {
			case fl.Type().Numeric():
				if num != nil {
					return nil, fmt.Errorf("two numeric columns, %s and %s", num.Name, fl.Name)
				}
				num = fl
			case fl.Type() == data.FieldTypeString || fl.Type() == data.FieldTypeNullableString:
				labels = append(labels, fl)
			default:
				return nil, fmt.Errorf("column %s is %s, neither a number nor a label", fl.Name, fl.Type())
			}
		}
		if num == nil {
			return nil, fmt.Errorf("no numeric column")
		}
		names := map[string]bool{}
		for _, l := range labels {
			names[l.Name] = true
		}
		for _, n := range []string{"run", "rank", "host", "detector"} {
			if !names[n] {
				return nil, fmt.Errorf("no %s label column", n)
			}
		}
		seen := map[string]bool{}
		for i := 0; i < f.Rows(); i++ {
			var set []string
			lab := map[string]string{}
			for _, l := range labels {
				v, _ := l.ConcreteAt(i)
				s, _ := v.(string)
				lab[l.Name] = s
				set = append(set, l.Name+"="+s)
			}
			key := strings.Join(set, ",")
			if seen[key] {
				return nil, fmt.Errorf("label set %s twice", key)
			}
			seen[key] = true
			v, err := num.NullableFloatAt(i)
			if err != nil || v == nil {
				return nil, fmt.Errorf("row %d: no value", i)
			}
			out[lab["run"]+"/"+lab["rank"]] = *v
		}
	}
	return out, nil
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

func readYAML(t *testing.T, path string, out any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(out); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}
