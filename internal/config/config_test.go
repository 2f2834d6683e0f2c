package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/viper"

	"github.com/trainscope/trainscope/detectors"
)

// serve.checkpoint_wal defaults to 256MB and must be a size.
func TestServeCheckpointWALConfig(t *testing.T) {
	cfg, err := Load("")
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
		_, err := Load(path)
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
			cfg, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Serve.Staged != tc.want {
				t.Errorf("serve.staged %v, want %v", cfg.Serve.Staged, tc.want)
			}
		})
	}
}

// With no file and no environment, the loaded config is Default():
// every leaf has its default registered (a leaf missing from viper's
// defaults would load as its zero value).
func TestLoadedDefaultsAreDefaultConfig(t *testing.T) {
	clearConfigEnv(t)
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	// printed, as nil and empty slices and maps print alike
	if got, want := fmt.Sprintf("%+v", *cfg), fmt.Sprintf("%+v", Default()); got != want {
		t.Errorf("loaded defaults\n%s\nwant Default()\n%s", got, want)
	}
}

// Every leaf key of the config reaches its TRAINSCOPE_* variable, and a
// key the types do not have is refused, naming its neighbours.
func TestEveryKeyHasItsVariable(t *testing.T) {
	var leaves []string
	var walk func(prefix string, keys any)
	walk = func(prefix string, keys any) {
		tables, ok := keys.(map[string]any)
		if !ok {
			leaves = append(leaves, prefix)
			return
		}
		for k, sub := range tables {
			if k == "*" {
				continue // keys the user names (detectors.thresholds)
			}
			p := k
			if prefix != "" {
				p = prefix + "." + k
			}
			walk(p, sub)
		}
	}
	walk("", configKeys(reflect.TypeOf(Default())))
	if len(leaves) < 60 {
		t.Fatalf("only %d config keys: %v", len(leaves), leaves)
	}
	for _, key := range leaves {
		t.Run(key, func(t *testing.T) {
			clearConfigEnv(t)
			env := "TRAINSCOPE_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
			// a value no key accepts: a string for numbers and durations,
			// checked files that do not exist, addresses that are none
			t.Setenv(env, "\x01not-a-value")
			_, err := Load("")
			v := viper.New()
			v.SetEnvPrefix("TRAINSCOPE")
			v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
			v.AutomaticEnv()
			setDefaults(v, reflect.ValueOf(Default()), "")
			if got := v.GetString(key); got != "\x01not-a-value" {
				t.Errorf("%s: %s does not set it (got %q)", key, env, got)
			}
			_ = err // many string keys accept any text; the point is that the variable arrives
		})
	}
	path := filepath.Join(t.TempDir(), "c.yaml")
	if err := os.WriteFile(path, []byte("serve:\n  quite: 1s\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "serve.quite: unknown key (known here: agent") && !strings.Contains(err.Error(), "serve.quite: unknown key (known here: archive, archive_refresh") {
		t.Errorf("unknown key: %v", err)
	}
}

// clearConfigEnv unsets every TRAINSCOPE_* variable for the test.
func clearConfigEnv(t *testing.T) {
	for _, kv := range os.Environ() {
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "TRAINSCOPE_") {
			t.Setenv(k, "")
			os.Unsetenv(k)
		}
	}
}

// The causes section holds the cause graph's thresholds: they default to
// detectors.DefaultCauses, reach the detector set, and a value out of
// range is refused with its key path.
func TestCausesConfig(t *testing.T) {
	cfg, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Causes != detectors.DefaultCauses() {
		t.Errorf("default causes %+v, want %+v", cfg.Causes, detectors.DefaultCauses())
	}
	for _, tc := range []struct{ text, wantErr string }{
		{"causes: {min_cost_pct: 2.5, one_off_ns: 0}\n", ""},
		{"causes: {min_cost_pct: 0}\n", "causes.min_cost_pct: 0, want 0 < pct <= 100"},
		{"causes: {min_cost_pct: 120}\n", "causes.min_cost_pct: 120, want 0 < pct <= 100"},
		{"causes: {min_cost_ns: -1}\n", "causes.min_cost_ns: -1, want >= 0"},
		{"causes: {one_off_share: 1.5}\n", "causes.one_off_share: 1.5, want 0 < share <= 1"},
		{"causes: {min_cost_z: 0}\n", "causes.min_cost_z: 0, want > 0"},
		{"causes: {min_cost: 3}\n", "causes.min_cost"},
	} {
		path := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(path, []byte(tc.text), 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%s: %v", tc.text, err)
		case tc.wantErr == "":
			if got := c.DetectorsConfig().Causes; got.MinCostPct != 2.5 || got.OneOffNS != 0 || got.MinCostNS != detectors.DefaultCauses().MinCostNS {
				t.Errorf("%s: the set gets causes %+v", tc.text, got)
			}
		case err == nil || !strings.Contains(err.Error(), tc.wantErr):
			t.Errorf("%s: error %v, want one saying %q", tc.text, err, tc.wantErr)
		}
	}
}

func TestAutoTriggerCheckDetectors(t *testing.T) {
	c := AutoTriggerConfig{Detectors: []string{"gpu_clock_cap", "nope"}}
	if err := c.CheckDetectors([]string{"gpu_clock_cap"}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Errorf("an unknown detector: %v", err)
	}
	if err := c.CheckDetectors([]string{"gpu_clock_cap", "nope"}); err != nil {
		t.Errorf("known detectors: %v", err)
	}
}

// read_memory takes DuckDB's size syntax; anything else is refused with
// its key.
func TestReadMemory(t *testing.T) {
	for in, want := range map[string]int64{"256MB": 256e6, "1GiB": 1 << 30, " 1.5 GB ": 1.5e9, "": 0} {
		c := Default()
		c.ReadMemory = in
		if err := c.Validate(); err != nil {
			t.Errorf("%q: %v", in, err)
		}
		if got := c.ReadMemoryBytes(); got != want {
			t.Errorf("%q: %d bytes, want %d", in, got, want)
		}
	}
	c := Default()
	c.ReadMemory = "lots"
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "read_memory") {
		t.Errorf("read_memory lots: %v", err)
	}
}
