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
