package watch

// Failure paths: corrupt or unwritable state, files that never publish,
// cancellation, and a watch folder that is missing or not a folder.

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestCorruptStateIsAnError(t *testing.T) {
	for _, tc := range []struct{ name, content, why string }{
		{"garbage", "{not json", "invalid character"},
		{"empty", "", "the file is empty"},
		{"truncated", `{"version":1,"files":{"a.json":{"size":`, "unexpected EOF"},
		{"trailing", `{"version":1} {}`, "unexpected data after"},
		{"version", `{"version":99,"files":{}}`, "version 99"},
		{"bad key", `{"version":1,"files":{"../a.json":{"status":"published"}}}`, "not a clean relative path"},
		{"bad status", `{"version":1,"files":{"a.json":{"status":"maybe"}}}`, `status "maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			writeFile(t, filepath.Join(cfg.Dir, "a.json"), "{}")
			sp := cfg.withDefaults().StatePath
			writeFile(t, sp, tc.content)
			r := &recorder{dir: cfg.Dir}
			for name, run := range map[string]func() error{
				"Once": func() error { return once(t, cfg, r, nil) },
				"Run":  func() error { return Run(context.Background(), cfg, r.publish, nil) },
			} {
				err := run()
				var se *StateError
				if !errors.As(err, &se) {
					t.Fatalf("%s: err = %v, want *StateError", name, err)
				}
				for _, want := range []string{sp, "move it away", tc.why} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("%s: error %q lacks %q", name, err, want)
					}
				}
			}
			if len(r.snapshot()) != 0 {
				t.Error("published despite a corrupt state")
			}
			if data, _ := os.ReadFile(sp); string(data) != tc.content {
				t.Error("corrupt state file was overwritten")
			}
		})
	}
}

func TestGiveUpRecordsFailed(t *testing.T) {
	for _, tc := range []struct {
		name string
		fn   func(context.Context, string, int) error
		want string
	}{
		{"error", func(context.Context, string, int) error { return errors.New("boom") }, "boom"},
		{"incomplete forever", func(context.Context, string, int) error { return ErrIncomplete }, ErrIncomplete.Error()},
		{"panic", func(context.Context, string, int) error { panic("reader bug") }, "publisher panicked: reader bug"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t)
			writeFile(t, filepath.Join(cfg.Dir, "bad.json"), "{")
			writeFile(t, filepath.Join(cfg.Dir, "good.json"), "{}")
			r := &recorder{dir: cfg.Dir, fn: func(ctx context.Context, p string, n int) error {
				if filepath.Base(p) == "good.json" {
					return nil
				}
				return tc.fn(ctx, p, n)
			}}
			start := time.Now()
			err := once(t, cfg, r, nil)
			if err == nil || !strings.Contains(err.Error(), "bad.json: "+tc.want) {
				t.Fatalf("Once = %v, want the failure of bad.json", err)
			}
			if took := time.Since(start); took < cfg.GiveUp {
				t.Errorf("gave up after %v, before GiveUp %v", took, cfg.GiveUp)
			}
			st := readState(t, cfg)
			e := st.Files["bad.json"]
			if e.Status != StatusFailed || e.Error != tc.want || e.Attempts < 3 {
				t.Errorf("state entry = %+v", e)
			}
			if st.Files["good.json"].Status != StatusPublished {
				t.Error("a failing file held up the good one")
			}

			// Failed is final for that version: no more attempts.
			r2 := &recorder{dir: cfg.Dir}
			if err := once(t, cfg, r2, nil); err != nil {
				t.Fatal(err)
			}
			if got := r2.rels(); len(got) != 0 {
				t.Errorf("failed file retried: %v", got)
			}
		})
	}
}

func TestCancellationIsPrompt(t *testing.T) {
	t.Run("idle", func(t *testing.T) {
		cfg := testConfig(t)
		cfg.Poll = time.Hour // cancellation must not wait for the next poll
		stop := startRun(t, cfg, &recorder{dir: cfg.Dir}, &logBuf{})
		time.Sleep(20 * time.Millisecond)
		err, took := stop()
		if err != nil || took > 500*time.Millisecond {
			t.Errorf("Run = %v after %v", err, took)
		}
	})
	t.Run("during publish", func(t *testing.T) {
		cfg := testConfig(t)
		writeFile(t, filepath.Join(cfg.Dir, "a.json"), "{}")
		started := make(chan struct{})
		r := &recorder{dir: cfg.Dir, fn: func(ctx context.Context, _ string, _ int) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		}}
		stop := startRun(t, cfg, r, &logBuf{})
		<-started
		err, took := stop()
		if err != nil || took > 500*time.Millisecond {
			t.Errorf("Run = %v after %v", err, took)
		}
		// Interrupted is not failed: the next start publishes it.
		if e, ok := readState(t, cfg).Files["a.json"]; ok {
			t.Errorf("interrupted publish recorded: %+v", e)
		}
	})
	t.Run("once", func(t *testing.T) {
		cfg := testConfig(t)
		writeFile(t, filepath.Join(cfg.Dir, "a.json"), "{}")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		r := &recorder{dir: cfg.Dir}
		if err := Once(ctx, cfg, r.publish, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Once = %v, want the context's error", err)
		}
	})
}

func TestWaitsForMissingDir(t *testing.T) {
	root := t.TempDir()
	cfg := testConfig(t)
	cfg.Dir = filepath.Join(root, "traces")
	cfg.StatePath = filepath.Join(root, "state", "watch.json") // elsewhere, so Dir is not created for it

	if err := once(t, cfg, &recorder{dir: cfg.Dir}, nil); err == nil || !strings.Contains(err.Error(), cfg.Dir) {
		t.Errorf("Once on a missing dir = %v, want an error naming it", err)
	}

	r := &recorder{dir: cfg.Dir}
	logs := &logBuf{}
	stop := startRun(t, cfg, r, logs)
	waitFor(t, "the waiting log", func() bool { return logs.contains("does not exist yet") })
	writeFile(t, filepath.Join(cfg.Dir, "a.json"), "{}")
	waitFor(t, "publish", func() bool { return len(r.snapshot()) == 1 })
	if err, _ := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestDirIsAFile(t *testing.T) {
	cfg := testConfig(t)
	cfg.Dir = filepath.Join(cfg.Dir, "file")
	cfg.StatePath = cfg.Dir + ".state"
	writeFile(t, cfg.Dir, "x")
	err := Run(context.Background(), cfg, (&recorder{}).publish, nil)
	if !errors.Is(err, errNotFolder) {
		t.Errorf("Run = %v, want a not-a-folder error", err)
	}
}

func TestUnwritableStateFailsAtStart(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes anywhere")
	}
	cfg := testConfig(t)
	ro := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	cfg.StatePath = filepath.Join(ro, "state.json")
	err := Once(context.Background(), cfg, (&recorder{}).publish, nil)
	if err == nil || !strings.Contains(err.Error(), "cannot write") {
		t.Errorf("Once = %v, want a cannot-write error", err)
	}
}
