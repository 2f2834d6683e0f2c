package server

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/internal/config"
)

// testConfig is the default config on free loopback ports, with its data
// in a folder of the test's.
func testConfig(t *testing.T) *config.Config {
	t.Helper()
	t.Setenv("TRAINSCOPE_NATS_LISTEN", "127.0.0.1:0")
	cfg, err := config.Load("")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Serve.DataDir, cfg.Serve.HTTP, cfg.Serve.Flight = t.TempDir(), "127.0.0.1:0", "127.0.0.1:0"
	return cfg
}

func mustSet(t *testing.T) *detectors.Set {
	t.Helper()
	set, err := detectors.NewSet(detectors.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	r, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	return r.StatusCode, string(b)
}

// Start brings up every part and says where; Shutdown stops them all,
// once, however often it is called.
func TestStartShutdown(t *testing.T) {
	cfg := testConfig(t)
	srv, err := Start(context.Background(), cfg, mustSet(t), t.Logf, WithVersion("v-test"))
	if err != nil {
		t.Fatal(err)
	}
	if srv.NATSURL() == "" || srv.HTTPAddr() == "" || srv.FlightAddr() == "" || srv.Embedded() == nil || srv.NATS() == nil {
		t.Fatalf("started, but NATS %q, HTTP %q, Flight SQL %q", srv.NATSURL(), srv.HTTPAddr(), srv.FlightAddr())
	}
	if srv.Store() == nil || srv.Scheduler() == nil || srv.Stats() == nil || srv.Monitor() == nil {
		t.Fatal("started without its store, scheduler or ingest counters")
	}
	if srv.Coordinator() != nil {
		t.Error("a coordinator on a stream of one partition")
	}
	if code, body := get(t, "http://"+srv.HTTPAddr()+"/"); code != 200 || !strings.Contains(body, "trainscope v-test") || !strings.Contains(body, srv.FlightAddr()) {
		t.Errorf("/: %d %q, want the version and the Flight SQL address", code, body)
	}
	if code, body := get(t, "http://"+srv.HTTPAddr()+"/healthz"); code != 200 || !strings.Contains(body, `"status":"ok"`) {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if _, err := os.Stat(filepath.Join(cfg.Serve.DataDir, "trainscope.duckdb")); err != nil {
		t.Errorf("no database in the data folder: %v", err)
	}
	if err := srv.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Shutdown(); err != nil {
		t.Errorf("a second Shutdown: %v", err)
	}
	if _, err := http.Get("http://" + srv.HTTPAddr() + "/healthz"); err == nil {
		t.Error("HTTP still answers after Shutdown")
	}
	// the data folder is free for the next server
	cfg.Serve.Flight = ""
	srv, err = Start(context.Background(), cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatalf("again on the same data folder: %v", err)
	}
	if srv.FlightAddr() != "" {
		t.Errorf("serve.flight off, but Flight SQL on %s", srv.FlightAddr())
	}
	srv.Shutdown()
}

// serve will not open a port beyond loopback that takes anyone: the
// README's own example (--http :7070 --flight :7071) once exposed every
// run, and the embedded NATS let anyone delete the ingest consumer.
func TestServeRefusesOpenListeners(t *testing.T) {
	cfg := testConfig(t)
	cfg.Serve.HTTP, cfg.Serve.Flight, cfg.NATS.Listen = ":0", "0.0.0.0:0", "0.0.0.0:0"
	_, err := Start(context.Background(), cfg, mustSet(t), t.Logf)
	for _, want := range []string{"nats.listen 0.0.0.0:0", "serve.http :0", "serve.flight 0.0.0.0:0", "serve.insecure"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v; want it to name %q", err, want)
		}
	}
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Errorf("%T, want a *config.Error (exit 2)", err)
	}
	// with credentials for each, or when told to, it starts
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("t0ken\n"), 0o600)
	cfg.Serve.Auth.TokenFile = tokenFile
	cfg.NATS.Server.User, cfg.NATS.Server.Password = "agent", "pw"
	srv, err := Start(context.Background(), cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatalf("with credentials: %v", err)
	}
	srv.Shutdown()
	cfg = testConfig(t)
	cfg.Serve.HTTP, cfg.Serve.Insecure = "0.0.0.0:0", true
	srv, err = Start(context.Background(), cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatalf("with serve.insecure: %v", err)
	}
	srv.Shutdown()
}

// What the listeners ask of clients comes from files that must hold it:
// each bad one is a config error naming its key.
func TestLoadServeSecurity(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte("\n"), 0o600)
	notPEM := filepath.Join(dir, "ca.pem")
	os.WriteFile(notPEM, []byte("not a certificate"), 0o600)
	for _, tc := range []struct {
		cfg  config.ServeConfig
		want string
	}{
		{config.ServeConfig{Auth: config.AuthConfig{TokenFile: empty}}, "serve.auth.token_file: " + empty + " is empty"},
		{config.ServeConfig{Auth: config.AuthConfig{TokenFile: filepath.Join(dir, "none")}}, "serve.auth.token_file: "},
		{config.ServeConfig{TLS: config.ServeTLS{Cert: notPEM, Key: notPEM}}, "serve.tls: "},
	} {
		if _, err := loadServeSecurity(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	sec, err := loadServeSecurity(config.ServeConfig{Auth: config.AuthConfig{Token: "inline"}})
	if err != nil || sec.token != "inline" || !sec.authenticates() || sec.tls != nil {
		t.Errorf("an inline token: %+v, %v", sec, err)
	}
	if sec, err := loadServeSecurity(config.ServeConfig{}); err != nil || sec.authenticates() {
		t.Errorf("nothing asked: %+v, %v", sec, err)
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:7070": true, "localhost:7070": true, "[::1]:7070": true, "127.8.9.10:0": true,
		":7070": false, "0.0.0.0:7070": false, "[::]:7070": false, "10.0.0.1:7070": false, "myhost:7070": false, "nonsense": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// A query node wants a folder to serve: anything else is a config error,
// and nothing is left listening.
func TestQueryNodeRefusesMissingArchive(t *testing.T) {
	cfg := testConfig(t)
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	for _, arch := range []string{filepath.Join(t.TempDir(), "none"), file} {
		cfg.Serve.QueryOnly, cfg.Serve.Archive = true, arch
		_, err := StartQueryNode(context.Background(), cfg, t.Logf)
		var ce *config.Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "serve --query-only: archive "+arch) {
			t.Errorf("archive %s: %v, want a config error naming it", arch, err)
		}
	}
}

// A query node serves an archive folder, with no NATS and no scheduler.
func TestQueryNodeStartShutdown(t *testing.T) {
	cfg := testConfig(t)
	cfg.Serve.QueryOnly, cfg.Serve.Archive = true, t.TempDir()
	srv, err := StartQueryNode(context.Background(), cfg, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	if srv.NATSURL() != "" || srv.NATS() != nil || srv.Scheduler() != nil || srv.FlightAddr() == "" {
		t.Errorf("query node: NATS %q, scheduler %v, Flight SQL %q", srv.NATSURL(), srv.Scheduler(), srv.FlightAddr())
	}
	if code, body := get(t, "http://"+srv.HTTPAddr()+"/healthz"); code != 200 || !strings.Contains(body, `"mode":"query-only"`) {
		t.Errorf("/healthz: %d %s", code, body)
	}
	if code, body := get(t, "http://"+srv.HTTPAddr()+"/runs"); code != 200 || strings.TrimSpace(body) != "[]" {
		t.Errorf("/runs on a query node: %d %q, want an empty list", code, body)
	}
}
