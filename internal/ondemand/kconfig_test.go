package ondemand

import (
	"strings"
	"testing"
	"time"
)

func TestKinetoConfig(t *testing.T) {
	text := kinetoConfig("/tmp/t/a.pt.trace.json", "od1", 5, 0, 0, time.Time{}, 0, Toggles{Flops: true, Modules: true})
	want := "ACTIVITIES_LOG_FILE=/tmp/t/a.pt.trace.json\nPROFILE_START_ITERATION=0\nPROFILE_START_ITERATION_ROUNDUP=1\nACTIVITIES_ITERATIONS=5\n" +
		"PROFILE_REPORT_INPUT_SHAPES=false\nPROFILE_PROFILE_MEMORY=false\nPROFILE_WITH_STACK=false\nPROFILE_WITH_FLOPS=true\nPROFILE_WITH_MODULES=true\nREQUEST_TRACE_ID=od1\n"
	if text != want {
		t.Fatalf("config\n%s\nwant\n%s", text, want)
	}
	kv, err := ParseKinetoConfig(text)
	if err != nil || len(kv) != 10 || kv["ACTIVITIES_ITERATIONS"] != "5" {
		t.Fatal(kv, err)
	}
	text = kinetoConfig("/tmp/t/a.json", "", 0, 0, 1500*time.Millisecond, time.Time{}, 64, Toggles{})
	if !strings.Contains(text, "ACTIVITIES_DURATION_MSECS=1500\n") || strings.Contains(text, "PROFILE_START_TIME") || !strings.Contains(text, "ACTIVITIES_MAX_GPU_BUFFER_SIZE_MB=64\n") || strings.Contains(text, "REQUEST_TRACE_ID") {
		t.Fatalf("duration config %q", text)
	}
}

func TestParseKinetoConfig(t *testing.T) {
	kv, err := ParseKinetoConfig("# comment\n  A = 1 # trailing\n\nB=x\n")
	if err != nil || kv["A"] != "1" || kv["B"] != "x" || len(kv) != 2 {
		t.Fatal(kv, err)
	}
	for _, bad := range []string{"A=1=2", "JUSTAKEY", "A=1\nB"} {
		if _, err := ParseKinetoConfig(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestTracePath(t *testing.T) {
	for in, want := range map[string]string{
		"/tmp/a.pt.trace.json":      "/tmp/a_42.pt.trace.json",
		"/tmp/a.json":               "/tmp/a_42.json",
		"/tmp/a.json.gz":            "/tmp/a_42.json.gz",
		"/tmp/a.trace":              "/tmp/a.trace",
		"/tmp/x.pt.trace.json.json": "/tmp/x_42.pt.trace.json.json",
	} {
		if got := TracePath(in, 42); got != want {
			t.Errorf("TracePath(%s) = %s, want %s", in, got, want)
		}
	}
	if DefaultTracePath(7) != "/tmp/libkineto_activities_7.json" {
		t.Fatal(DefaultTracePath(7))
	}
}

func TestLibkinetoAccepts(t *testing.T) {
	for _, c := range []struct {
		file, env string
		ok        bool
	}{
		{"/tmp/x/a.json", "", true},
		{"/tmpfoo/a.json", "", false},
		{"/var/t/a.json", "", false},
		{"/var/t/a.json", "/var/t", true},
		{"/var/t/a.json", "/var/t/", true},
		{"/var/tt/a.json", "/var/t", false},
		{"/tmp/../etc/a.json", "", false},
	} {
		if got := libkinetoAccepts(c.file, c.env); got != c.ok {
			t.Errorf("libkinetoAccepts(%s, %q) = %v", c.file, c.env, got)
		}
	}
}

func TestFileTokenAndID(t *testing.T) {
	if fileToken("node/a.b c") != "node_a_b_c" || fileToken("") != "_" || len(fileToken(strings.Repeat("x", 100))) != 64 {
		t.Fatal("fileToken")
	}
	for id, ok := range map[string]bool{"od123-run_1": true, "": false, "a.b": false, strings.Repeat("a", 65): false} {
		if (CheckID(id) == nil) != ok {
			t.Errorf("CheckID(%q)", id)
		}
	}
}
