//go:build duckdb_arrow

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/grpcplugin"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"

	"github.com/trainscope/trainscope/sql/duck"
)

const pluginID = "trainscope-trainscope-datasource"

// The shared fixture: one store, one plain Flight SQL server, one plugin
// process.
var (
	store      *duck.Store
	flightAddr string
	// archiveAddr serves the demo runs as a query node does: from the
	// fleet archive they were written to (Parquet), not from the store
	archiveAddr string
	plug        *pluginProc
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx := context.Background()
	tmp, err := os.MkdirTemp("", "trainscope-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(tmp)

	t0 := time.Now()
	bin := filepath.Join(tmp, "gpx_trainscope_linux_amd64")
	build := exec.Command("go", "build", "-o", bin, "./pkg")
	build.Dir = ".."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build plugin: %v\n%s", err, out)
		return 1
	}
	tBuild := time.Since(t0)

	if store, err = openDemoStore(ctx, filepath.Join(tmp, "demo.duckdb")); err != nil {
		fmt.Fprintln(os.Stderr, "demo store:", err)
		return 1
	}
	defer store.Close()
	addr, stop, err := serveDemo(ctx, store)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flight sql:", err)
		return 1
	}
	defer stop()
	flightAddr = addr
	aaddr, astop, err := serveArchive(ctx, store, filepath.Join(tmp, "archive"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "archive:", err)
		return 1
	}
	defer astop()
	archiveAddr = aaddr

	if plug, err = startPlugin(bin); err != nil {
		fmt.Fprintln(os.Stderr, "start plugin:", err)
		return 1
	}
	defer plug.client.Kill()
	fmt.Fprintf(os.Stderr, "e2e fixture: plugin built in %s, demo loaded and served at %s in %s\n", tBuild.Round(time.Millisecond), flightAddr, (time.Since(t0) - tBuild).Round(time.Millisecond))
	return m.Run()
}

// pluginProc is the plugin binary as Grafana holds it.
type pluginProc struct {
	client *goplugin.Client
	data   grpcplugin.DataClient
	diag   grpcplugin.DiagnosticsClient
	res    grpcplugin.ResourceClient
}

// startPlugin starts bin the way Grafana's plugin manager does.
func startPlugin(bin string) (*pluginProc, error) {
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "GF_PLUGIN_TRACING=false")
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig: goplugin.HandshakeConfig{
			ProtocolVersion:  grpcplugin.ProtocolVersion,
			MagicCookieKey:   grpcplugin.MagicCookieKey,
			MagicCookieValue: grpcplugin.MagicCookieValue,
		},
		VersionedPlugins: map[int]goplugin.PluginSet{
			grpcplugin.ProtocolVersion: {
				"data":        &grpcplugin.DataGRPCPlugin{},
				"diagnostics": &grpcplugin.DiagnosticsGRPCPlugin{},
				"resource":    &grpcplugin.ResourceGRPCPlugin{},
			},
		},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           hclog.New(&hclog.LoggerOptions{Output: io.Discard, Level: hclog.Error}),
		StartTimeout:     30 * time.Second,
	})
	rpc, err := c.Client()
	if err != nil {
		c.Kill()
		return nil, err
	}
	p := &pluginProc{client: c}
	for name, dst := range map[string]any{"data": &p.data, "diagnostics": &p.diag, "resource": &p.res} {
		raw, err := rpc.Dispense(name)
		if err != nil {
			c.Kill()
			return nil, fmt.Errorf("dispense %s: %w", name, err)
		}
		switch d := dst.(type) {
		case *grpcplugin.DataClient:
			*d = raw.(grpcplugin.DataClient)
		case *grpcplugin.DiagnosticsClient:
			*d = raw.(grpcplugin.DiagnosticsClient)
		case *grpcplugin.ResourceClient:
			*d = raw.(grpcplugin.ResourceClient)
		}
	}
	return p, nil
}

// dsConfig is one data source's settings; id keeps instances apart in
// the plugin's instance manager.
type dsConfig struct {
	id       int64
	jsonData map[string]any
	secure   map[string]string
}

func demoDS() dsConfig {
	return dsConfig{id: 1, jsonData: map[string]any{"address": flightAddr}}
}

// archiveDS is a data source on the query node over the demo's archive.
func archiveDS() dsConfig {
	return dsConfig{id: 2, jsonData: map[string]any{"address": archiveAddr}}
}

func (c dsConfig) pluginContext() backend.PluginContext {
	jd, _ := json.Marshal(c.jsonData)
	return backend.PluginContext{
		OrgID:    1,
		PluginID: pluginID,
		DataSourceInstanceSettings: &backend.DataSourceInstanceSettings{
			ID: c.id, UID: fmt.Sprintf("ds%d", c.id), Type: pluginID, Name: "trainscope",
			JSONData: jd, DecryptedSecureJSONData: c.secure, Updated: time.Unix(c.id, 0),
		},
	}
}

// query sends queries (query models) over gRPC and returns the response.
func (p *pluginProc) query(ctx context.Context, t *testing.T, ds dsConfig, tr backend.TimeRange, models ...map[string]any) *backend.QueryDataResponse {
	t.Helper()
	req := &backend.QueryDataRequest{PluginContext: ds.pluginContext()}
	for i, m := range models {
		ref, _ := m["refId"].(string)
		if ref == "" {
			ref = string(rune('A' + i))
			m["refId"] = ref
		}
		js, _ := json.Marshal(m)
		req.Queries = append(req.Queries, backend.DataQuery{RefID: ref, TimeRange: tr, Interval: time.Minute, MaxDataPoints: 1000, JSON: js})
	}
	resp, err := p.data.QueryData(ctx, backend.ToProto().QueryDataRequest(req))
	if err != nil {
		t.Fatalf("QueryData: %v", err)
	}
	out, err := backend.FromProto().QueryDataResponse(resp)
	if err != nil {
		t.Fatalf("QueryData response: %v", err)
	}
	return out
}

func (p *pluginProc) health(ctx context.Context, t *testing.T, ds dsConfig) *backend.CheckHealthResult {
	t.Helper()
	resp, err := p.diag.CheckHealth(ctx, &pluginv2.CheckHealthRequest{PluginContext: backend.ToProto().PluginContext(ds.pluginContext())})
	if err != nil {
		t.Fatalf("CheckHealth: %v", err)
	}
	return backend.FromProto().CheckHealthResponse(resp)
}

// resource calls GET path?query and decodes the JSON body into out.
func (p *pluginProc) resource(ctx context.Context, t *testing.T, ds dsConfig, pathAndQuery string, out any) int {
	t.Helper()
	path := pathAndQuery
	if i := indexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	stream, err := p.resourceClient().CallResource(ctx, &pluginv2.CallResourceRequest{
		PluginContext: backend.ToProto().PluginContext(ds.pluginContext()),
		Path:          path, Method: "GET", Url: pathAndQuery,
	})
	if err != nil {
		t.Fatalf("CallResource %s: %v", pathAndQuery, err)
	}
	var status int
	var body []byte
	for {
		msg, err := stream.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("CallResource %s: %v", pathAndQuery, err)
		}
		if msg.Code != 0 {
			status = int(msg.Code)
		}
		body = append(body, msg.Body...)
	}
	if out != nil {
		if err := json.Unmarshal(body, out); err != nil {
			t.Fatalf("CallResource %s: body %s: %v", pathAndQuery, body, err)
		}
	}
	return status
}

func (p *pluginProc) resourceClient() grpcplugin.ResourceClient { return p.res }

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}
