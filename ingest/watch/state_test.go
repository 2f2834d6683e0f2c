package watch

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want []string // substrings; none means valid
	}{
		{"zero durations take defaults", Config{Dir: "/x"}, nil},
		{"explicit", Config{Dir: "/x", StatePath: "/s.json", Poll: time.Second, Settle: 2 * time.Second, GiveUp: time.Minute}, nil},
		{"no dir", Config{}, []string{"watch.dir: required"}},
		{"negative", Config{Dir: "/x", Poll: -1, Settle: -1, GiveUp: -1}, []string{
			"watch.poll: must be > 0", "watch.settle: must be > 0", "watch.give_up: must be > 0"}},
		{"give up within settle", Config{Dir: "/x", Settle: time.Minute, GiveUp: time.Second}, []string{
			"watch.give_up: must be longer than watch.settle"}},
		{"state is a folder", Config{Dir: "/x", StatePath: "/var/lib/" + string(filepath.Separator)}, []string{"watch.state_path:"}},
		{"every problem at once", Config{Poll: -time.Second, Settle: time.Hour}, []string{
			"watch.dir: required", "watch.poll: must be > 0 (got -1s)", "watch.give_up: must be longer"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("Validate = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate = nil, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate = %q, lacks %q", err, w)
				}
			}
			if n := strings.Count(err.Error(), "\n") + 1; n != len(tc.want) {
				t.Errorf("Validate reported %d problems, want %d: %q", n, len(tc.want), err)
			}
		})
	}
}

func TestDefaults(t *testing.T) {
	d := Config{Dir: "/traces"}.withDefaults()
	if d.Poll != 2*time.Second || d.Settle != 5*time.Second || d.GiveUp != 10*time.Minute || d.Match == nil {
		t.Errorf("defaults = %+v", d)
	}
	if want := filepath.Join("/traces", ".trainscope-watch.json"); d.StatePath != want {
		t.Errorf("StatePath = %q, want %q", d.StatePath, want)
	}
}

func TestDefaultMatch(t *testing.T) {
	for name, want := range map[string]bool{
		"worker0.1700000000000.pt.trace.json":    true,
		"worker0.1700000000000.pt.trace.json.gz": true,
		"snapshot.json":                          true,
		"UPPER.JSON.GZ":                          true,
		"rank0/sub.json":                         true,
		"rank0/.hidden.json":                     false,
		".trainscope-watch.json":                 false,
		"trace.json.tmp":                         false,
		"trace.json.gz.tmp":                      false,
		"snapshot.pickle":                        false,
		"trace.jsonl":                            false,
		"trace.json.gz.part":                     false,
		"notes.txt":                              false,
	} {
		if got := DefaultMatch(name); got != want {
			t.Errorf("DefaultMatch(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestFileID(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "rank0", "a.json")
	id := FileID(dir, p, 10, 20)
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("FileID = %q, want 64 hex digits", id)
	}
	if got := fileID("rank0/a.json", 10, 20); got != id {
		t.Error("FileID of an absolute path differs from the id of its relative path")
	}
	wd, _ := os.Getwd()
	if rel, err := filepath.Rel(wd, dir); err == nil {
		if got := FileID(rel, filepath.Join(rel, "rank0", "a.json"), 10, 20); got != id {
			t.Error("FileID depends on how dir is spelled")
		}
	}
	for name, other := range map[string]string{
		"size":  FileID(dir, p, 11, 20),
		"mtime": FileID(dir, p, 10, 21),
		"path":  FileID(dir, filepath.Join(dir, "rank1", "a.json"), 10, 20),
		// The separator keeps (path, size) pairs from running together.
		"ambiguity": FileID(dir, filepath.Join(dir, "rank0", "a.json1"), 0, 20),
	} {
		if other == id {
			t.Errorf("FileID ignores %s", name)
		}
	}
}

func TestStateFileFormat(t *testing.T) {
	cfg := testConfig(t)
	p := filepath.Join(cfg.Dir, "w0.1.pt.trace.json")
	writeFile(t, p, "{}")
	if err := once(t, cfg, &recorder{dir: cfg.Dir}, nil); err != nil {
		t.Fatal(err)
	}
	sp := cfg.withDefaults().StatePath
	data, err := os.ReadFile(sp)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version int
		Dir     string
		Files   map[string]map[string]any
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	e := doc.Files["w0.1.pt.trace.json"]
	if doc.Version != 1 || doc.Dir != cfg.Dir || e["status"] != "published" || e["size"] != 2.0 ||
		e["mtime_ns"] == nil || e["time"] == nil || e["attempts"] != 1.0 || len(e["id"].(string)) != 64 {
		t.Errorf("state file:\n%s", data)
	}
	if _, ok := e["error"]; ok {
		t.Error("error field written for a published file")
	}
	// The atomic write leaves no temporaries behind.
	if m, _ := filepath.Glob(filepath.Join(cfg.Dir, "*.tmp")); len(m) > 0 {
		t.Errorf("temporaries left: %v", m)
	}
	if m, _ := filepath.Glob(filepath.Join(cfg.Dir, ".*.tmp")); len(m) > 0 {
		t.Errorf("temporaries left: %v", m)
	}
}

func TestStaleTempsRemovedAtStart(t *testing.T) {
	cfg := testConfig(t)
	stale := filepath.Join(cfg.Dir, ".trainscope-watch.json.999.tmp")
	writeFile(t, stale, "half")
	if err := once(t, cfg, &recorder{dir: cfg.Dir}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale temporary still there: %v", err)
	}
}

func TestBackoff(t *testing.T) {
	w := &watcher{cfg: Config{Settle: 5 * time.Second, GiveUp: 10 * time.Minute}}
	var got []time.Duration
	for tries := 1; tries <= 6; tries++ {
		got = append(got, w.backoff(tries))
	}
	want := []time.Duration{5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("backoff = %v, want %v", got, want)
		}
	}
	// A short GiveUp caps the backoff at a quarter of it, but never below Settle.
	w.cfg = Config{Settle: 30 * time.Millisecond, GiveUp: 200 * time.Millisecond}
	if d := w.backoff(5); d != 50*time.Millisecond {
		t.Errorf("short GiveUp backoff = %v, want 50ms", d)
	}
}
