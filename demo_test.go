package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// freeAddr is a loopback address with a port nobody listens on now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// make demo as a user sees it: deploy/demo.sh starts serve, publishes the
// bundled sample, and prints the served report with its verdict, the
// findings over Flight SQL and the metrics. The binary is this test's
// (TestMain runs trainscope when TRAINSCOPE_AS_MAIN is set).
func TestDemoPrintsTheReport(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server")
	}
	for _, tool := range []string{"bash", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("deploy/demo.sh needs %s (.ci/run installs it): %v", tool, err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "trainscope")
	if err := os.WriteFile(bin, []byte("#!/bin/sh\nTRAINSCOPE_AS_MAIN=1 exec "+self+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "deploy/demo.sh")
	cmd.Env = append(os.Environ(), "BIN="+bin, "OUT="+filepath.Join(dir, "out"), "SAMPLE=bench/sample",
		"DEMO_HTTP="+freeAddr(t), "DEMO_FLIGHT="+freeAddr(t), "DEMO_NATS="+freeAddr(t))
	out, err := cmd.CombinedOutput()
	text := string(out)
	if err != nil {
		t.Fatalf("demo.sh: %v\n%s", err, text)
	}
	for _, want := range []string{
		"serve is up",
		"# trainscope report", "## Verdict", "Run `demo`: 2 rank(s)",
		"- a typical step, ", "## Findings", "## Recommendations",
		"The findings, as any Flight SQL client sees them:", "severity", "gpu_idle",
		"trainscope_detector_runs_total 1",
		"server stopped",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q:\n%s", want, text)
		}
	}
	// the verdict's headline is the bold line under the run's line
	verdict := text[strings.Index(text, "## Verdict"):]
	if lines := strings.SplitN(verdict, "\n", 6); len(lines) < 5 || !strings.HasPrefix(lines[4], "**") {
		t.Errorf("no bold headline under the verdict:\n%s", head(verdict, 8))
	}
}
