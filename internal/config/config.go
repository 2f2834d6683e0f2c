package config

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"slices"
	"time"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/stream/transport"
)

// Config is trainscope's configuration. Defaults need no file; a file given
// with --config, then TRAINSCOPE_* environment variables, then flags
// override them.
type Config struct {
	// Threads is the core count every pool, worker count and DuckDB's
	// threads are sized from (cores); 0 means GOMAXPROCS.
	Threads int `mapstructure:"threads"`
	// ReadMemory bounds what the traces being read at once may hold (analyze,
	// diff, profile and export: ingest.Options.ReadMemory), a size like
	// 256MB; "" is room for 4 of the largest traces, at least 128MB.
	ReadMemory string           `mapstructure:"read_memory"`
	Detectors  detectors.Config `mapstructure:"detectors"`
	// Causes are the cause graph's thresholds: what a root cause must
	// cost, when a stall is one-off.
	Causes  detectors.CausesConfig    `mapstructure:"causes"`
	DuckDB  DuckDBConfig              `mapstructure:"duckdb"`
	NATS    transport.NATSConfig      `mapstructure:"nats"`
	Stream  transport.StreamConfig    `mapstructure:"stream"`
	Publish transport.PublisherConfig `mapstructure:"publish"`
	Ingest  ingest.ConsumerConfig     `mapstructure:"ingest"`
	Serve   ServeConfig               `mapstructure:"serve"`
	Agent   AgentConfig               `mapstructure:"agent"`
}

// ServeConfig is the always-on server's: where it keeps its data and
// where it listens.
type ServeConfig struct {
	DataDir string `mapstructure:"data_dir"`
	HTTP    string `mapstructure:"http"`   // /healthz, /metrics, reports
	Flight  string `mapstructure:"flight"` // Arrow Flight SQL; "" turns it off
	// Quiet is how long a run must receive nothing before the detectors
	// run over its complete steps; Timeout runs them anyway this long after
	// a run's first unanalyzed batch, for runs that never go quiet.
	Quiet   time.Duration `mapstructure:"quiet"`
	Timeout time.Duration `mapstructure:"timeout"`
	// Query bounds each Flight SQL query.
	Query QueryLimits `mapstructure:"query"`
	// Auth and TLS protect Flight SQL and HTTP (all but /healthz).
	Auth AuthConfig `mapstructure:"auth"`
	TLS  ServeTLS   `mapstructure:"tls"`
	// Insecure lets serve listen beyond loopback without authentication.
	Insecure bool `mapstructure:"insecure"`
	// Archive is the fleet archive's folder: an ingestor writes every
	// analysed run there as Parquet; a query node (--query-only) serves
	// it, looking for tables' first files every ArchiveRefresh.
	// Archive is a folder or s3://bucket/prefix (reached as ArchiveS3 says).
	Archive        string           `mapstructure:"archive"`
	ArchiveRefresh time.Duration    `mapstructure:"archive_refresh"`
	ArchiveS3      ArchiveS3Options `mapstructure:"archive_s3"`
	// CheckpointWAL is the size of the ingestor's write-ahead log at which
	// DuckDB checkpoints it (compresses the new rows into the database
	// file): it bounds the log a restart replays and the memory the
	// uncheckpointed rows hold.
	CheckpointWAL string `mapstructure:"checkpoint_wal"`
	// Staged (the default) keeps the ingested slices, counters, stacks and
	// step accounts as Parquet files beside the database
	// (DATA_DIR/trainscope.staged) instead of in it: ingest is 3-4x faster (bench/RESULTS.md); queries
	// read them through views of the tables' names (duck.StagedTables). A
	// store once staged stays so. False keeps every row in DuckDB's tables.
	Staged bool `mapstructure:"staged"`
	// QueryOnly makes serve a query node over Archive: no NATS, no
	// ingestor, no detectors.
	QueryOnly bool `mapstructure:"query_only"`
	// AutoTrigger raises on-demand captures from the live passes' findings.
	AutoTrigger AutoTriggerConfig `mapstructure:"auto_trigger"`
}

// ArchiveS3Options reach an S3-compatible archive (AWS S3, MinIO). The
// keys default to AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
type ArchiveS3Options struct {
	Endpoint  string `mapstructure:"endpoint"`
	Region    string `mapstructure:"region"`
	Insecure  bool   `mapstructure:"insecure"`
	AccessKey string `mapstructure:"access_key"`
	SecretKey string `mapstructure:"secret_key"`
}

// QueryLimits bound what one Flight SQL query may cost.
type QueryLimits struct {
	Timeout time.Duration `mapstructure:"timeout"`  // 0: none
	MaxRows int64         `mapstructure:"max_rows"` // 0: none
	// MemoryLimit caps the serving database's memory (DuckDB spills sorts
	// and joins to disk under it, and fails a query that cannot); empty:
	// a quarter of this machine's memory. duckdb.memory_limit, when set,
	// wins.
	MemoryLimit string `mapstructure:"memory_limit"`
}

// AuthConfig is the bearer token Flight SQL and HTTP clients must send
// (Authorization: Bearer <token>): given inline or, better, in a file.
type AuthConfig struct {
	Token     string `mapstructure:"token"`
	TokenFile string `mapstructure:"token_file"`
}

// ServeTLS serves Flight SQL and HTTP over TLS; with ClientCA it requires
// client certificates signed by it (mTLS), which also authenticates.
type ServeTLS struct {
	Cert     string `mapstructure:"cert"`
	Key      string `mapstructure:"key"`
	ClientCA string `mapstructure:"client_ca"`
}

// AgentConfig tunes the trace-folder watcher of 'trainscope agent'.
type AgentConfig struct {
	Poll     time.Duration  `mapstructure:"poll"`
	Settle   time.Duration  `mapstructure:"settle"`
	GiveUp   time.Duration  `mapstructure:"give_up"`
	OnDemand OnDemandConfig `mapstructure:"on_demand"`
}

// OnDemandConfig is the agent's on-demand capture (--on-demand): it
// stands where dynolog stands, hands the local PyTorch processes started
// with KINETO_USE_DAEMON=1 a profiler config on a trigger, and publishes
// the traces they write. Off by default: it binds the host's "dynolog"
// socket, and a trigger makes every process of a run trace.
type OnDemandConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Dir is where the processes write their traces: under /tmp/ or the
	// jobs' KINETO_ONDEMAND_TRACE_DIR, else libkineto writes
	// /tmp/libkineto_activities_<pid>.json (found too). Default
	// /tmp/trainscope-ondemand-<uid>.
	Dir string `mapstructure:"dir"`
	// AllowUIDs are users besides the agent's own whose processes it
	// serves.
	AllowUIDs []int `mapstructure:"allow_uids"`
	// SocketDir binds a socket file there (KINETO_IPC_SOCKET_DIR) instead
	// of the abstract socket, for pods without the host's network.
	SocketDir   string        `mapstructure:"socket_dir"`
	MaxSteps    int           `mapstructure:"max_steps"`    // steps of one capture
	MaxDuration time.Duration `mapstructure:"max_duration"` // length of a duration capture
	MaxTraceMB  int64         `mapstructure:"max_trace_mb"` // a larger trace is not published
	// Timeout frees a run for its next capture when a trace has not come
	// by then.
	Timeout time.Duration `mapstructure:"timeout"`
	// KeepTraces keeps each trace in Dir after it is published and
	// acknowledged; by default it is removed there (the stream holds it),
	// so repeated captures do not fill /tmp. Traces found elsewhere (the
	// /tmp/libkineto_activities_<pid>.json fallback, a container's root)
	// are never removed.
	KeepTraces bool `mapstructure:"keep_traces"`
}

// AutoTriggerConfig is serve's automatic on-demand capture: after a live
// pass, a finding of one of Detectors on a run asks that run's agents for
// a capture (as 'trainscope trigger'), at most once per Interval per run
// and Max captures per Interval across runs. Off by default.
type AutoTriggerConfig struct {
	Enabled bool `mapstructure:"enabled"`
	// Detectors are the detectors whose findings raise a capture: the
	// counter detectors of a slowdown the trace explains (gpu_clock_cap,
	// gpu_throttle, abnormal_util, ...). Required when enabled.
	Detectors []string      `mapstructure:"detectors"`
	Interval  time.Duration `mapstructure:"interval"`
	Max       int           `mapstructure:"max"`
	Steps     int           `mapstructure:"steps"` // steps to capture (0: trigger's default)
	Wait      int           `mapstructure:"wait"`  // step alignment (0: trigger's default)
	// Timeout is how long a trigger waits for the agents' replies.
	Timeout time.Duration `mapstructure:"timeout"`
}

// CheckDetectors says whether every configured detector is one of known
// (the loaded set's finding detectors): serve checks it at start, and
// 'trainscope validate' with the config it is given.
func (c AutoTriggerConfig) CheckDetectors(known []string) error {
	for _, d := range c.Detectors {
		if !slices.Contains(known, d) {
			return fmt.Errorf("serve.auto_trigger.detectors: %q is not a finding detector of this server (see 'trainscope validate')", d)
		}
	}
	return nil
}

// Validate reports every problem with its key path under prefix.
func (c AutoTriggerConfig) Validate(prefix string) error {
	var errs []error
	if c.Enabled && len(c.Detectors) == 0 {
		errs = append(errs, fmt.Errorf("%s.detectors: name the detectors whose findings raise a capture (%s.enabled is on)", prefix, prefix))
	}
	if c.Interval <= 0 || c.Max <= 0 || c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("%s: interval (%s), max (%d) and timeout (%s) must be positive", prefix, c.Interval, c.Max, c.Timeout))
	}
	if c.Steps < 0 || c.Wait < 0 {
		errs = append(errs, fmt.Errorf("%s: steps (%d) and wait (%d) may not be negative", prefix, c.Steps, c.Wait))
	}
	return errors.Join(errs...)
}

// DuckDBConfig tunes the embedded database.
type DuckDBConfig struct {
	Threads     int    `mapstructure:"threads"`
	MemoryLimit string `mapstructure:"memory_limit"`
}

// Default is every key's default, written once: Load gives viper each
// leaf of it (which also maps the key to its TRAINSCOPE_* variable) and
// knows the config's keys from its type.
func Default() Config {
	return Config{
		Detectors: detectors.Config{Dirs: []string{}, Disable: []string{}},
		Causes:    detectors.DefaultCauses(),
		NATS:      transport.DefaultNATS,
		Stream:    transport.DefaultStream,
		Publish:   transport.DefaultPublisher,
		Ingest:    ingest.DefaultConsumer,
		Serve: ServeConfig{DataDir: "trainscope-data", HTTP: "127.0.0.1:7070", Flight: "127.0.0.1:7071",
			Quiet: 2 * time.Second, Timeout: time.Minute, ArchiveRefresh: 10 * time.Second, CheckpointWAL: "256MB", Staged: true,
			Query:       QueryLimits{Timeout: time.Minute, MaxRows: 1_000_000},
			AutoTrigger: AutoTriggerConfig{Detectors: []string{}, Interval: 30 * time.Minute, Max: 4, Timeout: 5 * time.Second}},
		Agent: AgentConfig{Poll: 2 * time.Second, Settle: 5 * time.Second, GiveUp: 10 * time.Minute,
			OnDemand: OnDemandConfig{AllowUIDs: []int{}, MaxSteps: 50, MaxDuration: time.Minute, MaxTraceMB: 1024, Timeout: 10 * time.Minute}},
	}
}

var memLimitRE = regexp.MustCompile(`^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$`)

// Validate reports every problem, each with its key path: each section
// validates itself.
func (c *Config) Validate() error {
	var errs []error
	if c.Threads < 0 || c.Threads > MaxThreads {
		errs = append(errs, fmt.Errorf("threads: %d, want 0 (GOMAXPROCS) to %d", c.Threads, MaxThreads))
	}
	if c.ReadMemory != "" {
		if _, err := ParseSize(c.ReadMemory); err != nil {
			errs = append(errs, fmt.Errorf("read_memory: %w", err))
		}
	}
	for _, err := range []error{c.DuckDB.Validate("duckdb"), c.NATS.Validate("nats"), c.Stream.Validate("stream"),
		c.Publish.Validate("publish"), c.Ingest.Validate("ingest"), c.Serve.Validate("serve"), c.Agent.Validate("agent"),
		c.Detectors.Validate("detectors"), c.Causes.Validate("causes")} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Validate reports every problem with its key path under prefix.
func (c DuckDBConfig) Validate(prefix string) error {
	var errs []error
	if c.Threads < 0 || c.Threads > MaxThreads {
		errs = append(errs, fmt.Errorf("%s.threads: %d, want 0 (the threads key) to %d", prefix, c.Threads, MaxThreads))
	}
	if c.MemoryLimit != "" && !memLimitRE.MatchString(c.MemoryLimit) {
		errs = append(errs, fmt.Errorf("%s.memory_limit: %q is not a size like 2GB or 512MiB", prefix, c.MemoryLimit))
	}
	return errors.Join(errs...)
}

// Validate reports every problem with its key path under prefix.
func (c ServeConfig) Validate(prefix string) error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(prefix+"."+format, args...)) }
	for key, addr := range map[string]string{"http": c.HTTP, "flight": c.Flight} {
		if addr == "" && key == "flight" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			add("%s: %q is not host:port", key, addr)
		}
	}
	if c.DataDir == "" {
		add("data_dir: empty")
	}
	if c.Quiet <= 0 {
		add("quiet: %s, want > 0", c.Quiet)
	}
	if c.Timeout < c.Quiet {
		add("timeout: %s is shorter than %s.quiet %s", c.Timeout, prefix, c.Quiet)
	}
	if c.Query.Timeout < 0 {
		add("query.timeout: %s is negative", c.Query.Timeout)
	}
	if c.QueryOnly && c.Archive == "" {
		add("query_only: a query node serves the archive: set %s.archive (or --archive) too", prefix)
	}
	if c.ArchiveRefresh <= 0 {
		add("archive_refresh: %s, want > 0", c.ArchiveRefresh)
	}
	if c.Query.MaxRows < 0 {
		add("query.max_rows: %d is negative", c.Query.MaxRows)
	}
	if !memLimitRE.MatchString(c.CheckpointWAL) {
		add("checkpoint_wal: %q is not a size like 256MB or 1GiB", c.CheckpointWAL)
	}
	if m := c.Query.MemoryLimit; m != "" && !memLimitRE.MatchString(m) {
		add("query.memory_limit: %q is not a size like 2GB or 512MiB", m)
	}
	if c.Auth.Token != "" && c.Auth.TokenFile != "" {
		add("auth: give token or token_file, not both")
	}
	for key, f := range map[string]string{"auth.token_file": c.Auth.TokenFile, "tls.cert": c.TLS.Cert,
		"tls.key": c.TLS.Key, "tls.client_ca": c.TLS.ClientCA} {
		if f != "" {
			if _, err := os.Stat(f); err != nil {
				add("%s: %v", key, err)
			}
		}
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		add("tls: cert and key go together")
	}
	if c.TLS.ClientCA != "" && c.TLS.Cert == "" {
		add("tls.client_ca: needs %s.tls.cert and key (client certificates are checked over TLS)", prefix)
	}
	if err := c.AutoTrigger.Validate(prefix + ".auto_trigger"); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// Validate reports every problem with its key path under prefix.
func (c AgentConfig) Validate(prefix string) error {
	var errs []error
	for key, d := range map[string]time.Duration{"poll": c.Poll, "settle": c.Settle, "give_up": c.GiveUp} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s.%s: %s, want > 0", prefix, key, d))
		}
	}
	o := c.OnDemand
	if o.MaxSteps <= 0 || o.MaxDuration <= 0 || o.MaxTraceMB <= 0 || o.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("%s.on_demand: max_steps (%d), max_duration (%s), max_trace_mb (%d) and timeout (%s) must be positive",
			prefix, o.MaxSteps, o.MaxDuration, o.MaxTraceMB, o.Timeout))
	}
	for _, uid := range o.AllowUIDs {
		if uid < 0 {
			errs = append(errs, fmt.Errorf("%s.on_demand.allow_uids: %d is not a uid", prefix, uid))
		}
	}
	return errors.Join(errs...)
}

// DetectorsConfig is the detectors section with the causes section it
// carries to the reports the set's results make.
func (c *Config) DetectorsConfig() detectors.Config {
	d := c.Detectors
	d.Causes = c.Causes
	return d
}
