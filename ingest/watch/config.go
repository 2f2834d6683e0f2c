package watch

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Defaults for the zero values of Config.
const (
	DefaultPoll   = 2 * time.Second
	DefaultSettle = 5 * time.Second
	DefaultGiveUp = 10 * time.Minute
	// DefaultStateName is the state file's name inside Dir when
	// Config.StatePath is empty. It is a dot-file, so the default Match
	// skips it even without the explicit state-file exclusion.
	DefaultStateName = ".trainscope-watch.json"
)

// Config says what to watch and how patiently. Zero durations take the
// defaults; the mapstructure tags let the agent embed it under "watch".
type Config struct {
	// Dir is the folder torch.profiler writes into. It may not exist yet
	// (the profiler creates it on its first trace): Run waits for it.
	Dir string `mapstructure:"dir"`
	// StatePath is the JSON file recording what was handled; default
	// Dir/.trainscope-watch.json. Its folder is created if missing.
	StatePath string `mapstructure:"state_path"`
	// Poll is the time between directory scans (default 2s).
	Poll time.Duration `mapstructure:"poll"`
	// Settle is how long a file's size and mtime must stay unchanged
	// before it is published (default 5s).
	Settle time.Duration `mapstructure:"settle"`
	// GiveUp is how long a file may stay incomplete or unpublishable,
	// from the first attempt, before it is recorded as failed (default 10m).
	GiveUp time.Duration `mapstructure:"give_up"`
	// Match selects files by their path relative to Dir, slash-separated
	// (the bare name unless Recursive). Default: DefaultMatch. The state
	// file and its temporaries are always excluded, whatever Match says.
	Match func(name string) bool `mapstructure:"-"`
	// Recursive also watches subfolders (not dot-folders, and not through
	// symlinks, so a link loop cannot make a scan endless).
	Recursive bool `mapstructure:"recursive"`
}

// DefaultMatch accepts *.json and *.json.gz (any case), which covers
// torch.profiler traces and JSON memory snapshots, and rejects dot-files and
// *.tmp so editors' and writers' temporaries are never published.
func DefaultMatch(name string) bool {
	base := strings.ToLower(path.Base(name))
	if strings.HasPrefix(base, ".") || strings.HasSuffix(base, ".tmp") {
		return false
	}
	return strings.HasSuffix(base, ".json") || strings.HasSuffix(base, ".json.gz")
}

// withDefaults returns c with every zero field filled in.
func (c Config) withDefaults() Config {
	if c.Poll == 0 {
		c.Poll = DefaultPoll
	}
	if c.Settle == 0 {
		c.Settle = DefaultSettle
	}
	if c.GiveUp == 0 {
		c.GiveUp = DefaultGiveUp
	}
	if c.Match == nil {
		c.Match = DefaultMatch
	}
	if c.StatePath == "" && c.Dir != "" {
		c.StatePath = filepath.Join(c.Dir, DefaultStateName)
	}
	return c
}

// Validate reports every problem, each with its key path. Zero durations
// are valid (they mean the defaults). It touches no files: Dir may
// legitimately not exist yet.
func (c Config) Validate() error {
	d := c.withDefaults()
	var errs []error
	if strings.TrimSpace(c.Dir) == "" {
		errs = append(errs, errors.New("watch.dir: required (the folder torch.profiler writes traces into)"))
	}
	for _, f := range []struct {
		key string
		v   time.Duration
	}{{"watch.poll", d.Poll}, {"watch.settle", d.Settle}, {"watch.give_up", d.GiveUp}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("%s: must be > 0 (got %v)", f.key, f.v))
		}
	}
	// A GiveUp no longer than Settle would fail a slow-but-healthy writer
	// on its first retry; that is a configuration mistake, not a policy.
	if d.Settle > 0 && d.GiveUp > 0 && d.GiveUp <= d.Settle {
		errs = append(errs, fmt.Errorf("watch.give_up: must be longer than watch.settle (%v <= %v)", d.GiveUp, d.Settle))
	}
	if d.StatePath != "" && strings.HasSuffix(d.StatePath, string(filepath.Separator)) {
		errs = append(errs, fmt.Errorf("watch.state_path: %q names a folder, not a file", d.StatePath))
	}
	return errors.Join(errs...)
}
