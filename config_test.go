package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// serve.checkpoint_wal defaults to 256MB and must be a size.
func TestServeCheckpointWALConfig(t *testing.T) {
	cfg, err := loadConfig("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Serve.CheckpointWAL != "256MB" {
		t.Errorf("default serve.checkpoint_wal %q, want 256MB", cfg.Serve.CheckpointWAL)
	}
	for _, tc := range []struct{ value, wantErr string }{
		{"1GiB", ""},
		{"lots", `serve.checkpoint_wal: "lots" is not a size`},
		{"''", `serve.checkpoint_wal: "" is not a size`},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte("serve:\n  checkpoint_wal: "+tc.value+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := loadConfig(path)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.value, err)
		case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
			t.Errorf("%s: error %v, want one saying %q", tc.value, err, tc.wantErr)
		}
	}
}

// serve.staged is on unless a config file or the environment says no.
func TestServeStagedConfig(t *testing.T) {
	for _, tc := range []struct {
		name, file, env string
		want            bool
	}{
		{"default", "", "", true},
		{"file", "serve:\n  staged: false\n", "", false},
		{"environment", "", "false", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := ""
			if tc.file != "" {
				path = filepath.Join(t.TempDir(), "c.yaml")
				if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if tc.env != "" {
				t.Setenv("TRAINSCOPE_SERVE_STAGED", tc.env)
			}
			cfg, err := loadConfig(path)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Serve.Staged != tc.want {
				t.Errorf("serve.staged %v, want %v", cfg.Serve.Staged, tc.want)
			}
		})
	}
}
