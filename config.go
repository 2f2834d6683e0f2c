package main

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"

	"github.com/spf13/viper"

	"github.com/trainscope/trainscope/detectors"
)

// Config is trainscope's configuration. Defaults need no file; a file given
// with --config, then TRAINSCOPE_* environment variables, then flags
// override them.
type Config struct {
	Detectors detectors.Config `mapstructure:"detectors"`
	DuckDB    DuckDBConfig     `mapstructure:"duckdb"`
}

// DuckDBConfig tunes the embedded database.
type DuckDBConfig struct {
	Threads     int    `mapstructure:"threads"`
	MemoryLimit string `mapstructure:"memory_limit"`
}

var memLimitRE = regexp.MustCompile(`^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$`)

// Validate reports every problem, each with its key path.
func (c *Config) Validate() error {
	var errs []error
	if c.DuckDB.Threads < 0 {
		errs = append(errs, fmt.Errorf("duckdb.threads: %d is negative", c.DuckDB.Threads))
	}
	if c.DuckDB.MemoryLimit != "" && !memLimitRE.MatchString(c.DuckDB.MemoryLimit) {
		errs = append(errs, fmt.Errorf("duckdb.memory_limit: %q is not a size like 2GB or 512MiB", c.DuckDB.MemoryLimit))
	}
	for i, d := range c.Detectors.Dirs {
		if st, err := os.Stat(d); err != nil || !st.IsDir() {
			errs = append(errs, fmt.Errorf("detectors.dirs[%d]: %q is not a readable folder", i, d))
		}
	}
	return errors.Join(errs...)
}

// knownKeys are the config leaves; "*" matches any key.
var knownKeys = map[string]any{
	"detectors": map[string]any{
		"dirs":       nil,
		"disable":    nil,
		"thresholds": map[string]any{"*": map[string]any{"*": nil}},
	},
	"duckdb": map[string]any{"threads": nil, "memory_limit": nil},
}

// loadConfig reads the config file (optional), the environment, and returns
// the merged configuration with every unknown key and bad value reported.
func loadConfig(path string) (*Config, error) {
	v := viper.New()
	v.SetEnvPrefix("TRAINSCOPE")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	v.SetDefault("duckdb.threads", 0)
	v.SetDefault("duckdb.memory_limit", "")
	v.SetDefault("detectors.dirs", []string{})
	v.SetDefault("detectors.disable", []string{})
	if path == "" {
		path = os.Getenv("TRAINSCOPE_CONFIG")
	}
	if path != "" {
		v.SetConfigFile(path)
		if err := v.ReadInConfig(); err != nil {
			return nil, &inputError{fmt.Errorf("config %s: %w", path, err)}
		}
	}
	var errs []error
	errs = append(errs, checkKeys(v.AllSettings(), "", knownKeys)...)
	var c Config
	if err := v.Unmarshal(&c); err != nil {
		errs = append(errs, fmt.Errorf("config: %w", err))
	}
	if err := c.Validate(); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		where := "config"
		if path != "" {
			where = "config " + path
		}
		return nil, &inputError{fmt.Errorf("%s:\n  %w", where, indent(errors.Join(errs...)))}
	}
	return &c, nil
}

func indent(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), "\n", "\n  "))
}

func checkKeys(settings map[string]any, prefix string, schema map[string]any) []error {
	var errs []error
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := k
		if prefix != "" {
			path = prefix + "." + k
		}
		sub, ok := schema[k]
		if !ok {
			sub, ok = schema["*"]
		}
		if !ok {
			known := make([]string, 0, len(schema))
			for kk := range schema {
				known = append(known, kk)
			}
			sort.Strings(known)
			errs = append(errs, fmt.Errorf("%s: unknown key (known here: %s)", path, strings.Join(known, ", ")))
			continue
		}
		child, isMap := settings[k].(map[string]any)
		subSchema, wantMap := sub.(map[string]any)
		switch {
		case isMap && wantMap:
			errs = append(errs, checkKeys(child, path, subSchema)...)
		case isMap && !wantMap:
			errs = append(errs, fmt.Errorf("%s: expected a value, found a table", path))
		case !isMap && wantMap:
			errs = append(errs, fmt.Errorf("%s: expected a table of keys, found %v", path, settings[k]))
		}
	}
	return errs
}
