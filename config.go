package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest"
	"github.com/trainscope/trainscope/stream"
)

// Config is trainscope's configuration. Defaults need no file; a file given
// with --config, then TRAINSCOPE_* environment variables, then flags
// override them.
type Config struct {
	// Threads is the core count every pool, worker count and DuckDB's
	// threads are sized from (cores); 0 means GOMAXPROCS.
	Threads   int                    `mapstructure:"threads"`
	Detectors detectors.Config       `mapstructure:"detectors"`
	DuckDB    DuckDBConfig           `mapstructure:"duckdb"`
	NATS      stream.NATSConfig      `mapstructure:"nats"`
	Stream    stream.StreamConfig    `mapstructure:"stream"`
	Publish   stream.PublisherConfig `mapstructure:"publish"`
	Ingest    ingest.ConsumerConfig  `mapstructure:"ingest"`
	Serve     ServeConfig            `mapstructure:"serve"`
	Agent     AgentConfig            `mapstructure:"agent"`
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
	// Staged (the default) keeps the ingested slices, counters and stacks
	// as Parquet files beside the database (DATA_DIR/trainscope.staged)
	// instead of in it: ingest is 3-4x faster (bench/RESULTS.md); queries
	// read them through views of the tables' names (duck.StagedTables). A
	// store once staged stays so. False keeps every row in DuckDB's tables.
	Staged bool `mapstructure:"staged"`
	// QueryOnly makes serve a query node over Archive: no NATS, no
	// ingestor, no detectors.
	QueryOnly bool `mapstructure:"query_only"`
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
	Poll   time.Duration `mapstructure:"poll"`
	Settle time.Duration `mapstructure:"settle"`
	GiveUp time.Duration `mapstructure:"give_up"`
}

var defaultServe = ServeConfig{DataDir: "trainscope-data", HTTP: "127.0.0.1:7070", Flight: "127.0.0.1:7071",
	Quiet: 2 * time.Second, Timeout: time.Minute, ArchiveRefresh: 10 * time.Second, CheckpointWAL: "256MB", Staged: true,
	Query: QueryLimits{Timeout: time.Minute, MaxRows: 1_000_000}}

var defaultAgent = AgentConfig{Poll: 2 * time.Second, Settle: 5 * time.Second, GiveUp: 10 * time.Minute}

// DuckDBConfig tunes the embedded database.
type DuckDBConfig struct {
	Threads     int    `mapstructure:"threads"`
	MemoryLimit string `mapstructure:"memory_limit"`
}

var memLimitRE = regexp.MustCompile(`^\s*\d+(\.\d+)?\s*(B|KB|MB|GB|TB|KiB|MiB|GiB|TiB)\s*$`)

// Validate reports every problem, each with its key path.
func (c *Config) Validate() error {
	var errs []error
	if c.Threads < 0 || c.Threads > maxThreads {
		errs = append(errs, fmt.Errorf("threads: %d, want 0 (GOMAXPROCS) to %d", c.Threads, maxThreads))
	}
	if c.DuckDB.Threads < 0 || c.DuckDB.Threads > maxThreads {
		errs = append(errs, fmt.Errorf("duckdb.threads: %d, want 0 (the threads key) to %d", c.DuckDB.Threads, maxThreads))
	}
	if c.DuckDB.MemoryLimit != "" && !memLimitRE.MatchString(c.DuckDB.MemoryLimit) {
		errs = append(errs, fmt.Errorf("duckdb.memory_limit: %q is not a size like 2GB or 512MiB", c.DuckDB.MemoryLimit))
	}
	for _, err := range []error{c.NATS.Validate("nats"), c.Stream.Validate("stream"), c.Publish.Validate("publish"), c.Ingest.Validate("ingest")} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for key, addr := range map[string]string{"serve.http": c.Serve.HTTP, "serve.flight": c.Serve.Flight} {
		if addr == "" && key == "serve.flight" {
			continue
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			errs = append(errs, fmt.Errorf("%s: %q is not host:port", key, addr))
		}
	}
	if c.Serve.DataDir == "" {
		errs = append(errs, errors.New("serve.data_dir: empty"))
	}
	if c.Serve.Quiet <= 0 {
		errs = append(errs, fmt.Errorf("serve.quiet: %s, want > 0", c.Serve.Quiet))
	}
	if c.Serve.Timeout < c.Serve.Quiet {
		errs = append(errs, fmt.Errorf("serve.timeout: %s is shorter than serve.quiet %s", c.Serve.Timeout, c.Serve.Quiet))
	}
	if c.Serve.Query.Timeout < 0 {
		errs = append(errs, fmt.Errorf("serve.query.timeout: %s is negative", c.Serve.Query.Timeout))
	}
	if c.Serve.QueryOnly && c.Serve.Archive == "" {
		errs = append(errs, errors.New("serve.query_only: a query node serves the archive: set serve.archive (or --archive) too"))
	}
	if c.Serve.ArchiveRefresh <= 0 {
		errs = append(errs, fmt.Errorf("serve.archive_refresh: %s, want > 0", c.Serve.ArchiveRefresh))
	}
	if c.Serve.Query.MaxRows < 0 {
		errs = append(errs, fmt.Errorf("serve.query.max_rows: %d is negative", c.Serve.Query.MaxRows))
	}
	if !memLimitRE.MatchString(c.Serve.CheckpointWAL) {
		errs = append(errs, fmt.Errorf("serve.checkpoint_wal: %q is not a size like 256MB or 1GiB", c.Serve.CheckpointWAL))
	}
	if m := c.Serve.Query.MemoryLimit; m != "" && !memLimitRE.MatchString(m) {
		errs = append(errs, fmt.Errorf("serve.query.memory_limit: %q is not a size like 2GB or 512MiB", m))
	}
	if c.Serve.Auth.Token != "" && c.Serve.Auth.TokenFile != "" {
		errs = append(errs, errors.New("serve.auth: give token or token_file, not both"))
	}
	for key, f := range map[string]string{"serve.auth.token_file": c.Serve.Auth.TokenFile, "serve.tls.cert": c.Serve.TLS.Cert,
		"serve.tls.key": c.Serve.TLS.Key, "serve.tls.client_ca": c.Serve.TLS.ClientCA} {
		if f != "" {
			if _, err := os.Stat(f); err != nil {
				errs = append(errs, fmt.Errorf("%s: %v", key, err))
			}
		}
	}
	if (c.Serve.TLS.Cert == "") != (c.Serve.TLS.Key == "") {
		errs = append(errs, errors.New("serve.tls: cert and key go together"))
	}
	if c.Serve.TLS.ClientCA != "" && c.Serve.TLS.Cert == "" {
		errs = append(errs, errors.New("serve.tls.client_ca: needs serve.tls.cert and key (client certificates are checked over TLS)"))
	}
	for key, d := range map[string]time.Duration{"agent.poll": c.Agent.Poll, "agent.settle": c.Agent.Settle, "agent.give_up": c.Agent.GiveUp} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s: %s, want > 0", key, d))
		}
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
	"threads": nil,
	"detectors": map[string]any{
		"dirs":       nil,
		"disable":    nil,
		"thresholds": map[string]any{"*": map[string]any{"*": nil}},
	},
	"duckdb": map[string]any{"threads": nil, "memory_limit": nil},
	"nats": map[string]any{"url": nil, "user": nil, "password": nil, "nkey": nil, "creds": nil, "listen": nil,
		"tls": map[string]any{"ca": nil, "cert": nil, "key": nil},
		"server": map[string]any{"user": nil, "password": nil, "nkeys": nil,
			"tls": map[string]any{"cert": nil, "key": nil, "client_ca": nil}}},
	"stream":  map[string]any{"name": nil, "cluster": nil, "max_age": nil, "max_bytes": nil, "duplicates": nil, "replicas": nil, "partitions": nil, "discard": nil},
	"publish": map[string]any{"max_inflight": nil, "message_bytes": nil, "retry_for": nil},
	"ingest":  map[string]any{"durable": nil, "fetch_bytes": nil, "max_wait": nil, "ack_wait": nil, "member": nil, "lease": nil},
	"serve": map[string]any{"data_dir": nil, "http": nil, "flight": nil, "quiet": nil, "timeout": nil, "insecure": nil,
		"archive": nil, "archive_refresh": nil, "query_only": nil, "checkpoint_wal": nil, "staged": nil,
		"archive_s3": map[string]any{"endpoint": nil, "region": nil, "insecure": nil, "access_key": nil, "secret_key": nil},
		"query":      map[string]any{"timeout": nil, "max_rows": nil, "memory_limit": nil},
		"auth":       map[string]any{"token": nil, "token_file": nil},
		"tls":        map[string]any{"cert": nil, "key": nil, "client_ca": nil}},
	"agent": map[string]any{"poll": nil, "settle": nil, "give_up": nil},
}

// setDefaults gives every key its default, which also lets viper map each
// to its TRAINSCOPE_* variable (nats.url is TRAINSCOPE_NATS_URL).
func setDefaults(v *viper.Viper) {
	v.SetDefault("threads", 0)
	v.SetDefault("duckdb.threads", 0)
	v.SetDefault("duckdb.memory_limit", "")
	v.SetDefault("detectors.dirs", []string{})
	v.SetDefault("detectors.disable", []string{})
	n := stream.DefaultNATS
	for k, val := range map[string]any{"url": n.URL, "user": n.User, "password": n.Password, "nkey": n.NKey, "creds": n.Creds,
		"listen": n.Listen, "tls.ca": "", "tls.cert": "", "tls.key": "",
		"server.user": "", "server.password": "", "server.nkeys": []string{},
		"server.tls.cert": "", "server.tls.key": "", "server.tls.client_ca": ""} {
		v.SetDefault("nats."+k, val)
	}
	sc := stream.DefaultStream
	for k, val := range map[string]any{"name": sc.Name, "cluster": sc.Cluster, "max_age": sc.MaxAge, "max_bytes": sc.MaxBytes,
		"duplicates": sc.Duplicates, "replicas": sc.Replicas, "partitions": sc.Partitions, "discard": sc.Discard} {
		v.SetDefault("stream."+k, val)
	}
	p := stream.DefaultPublisher
	v.SetDefault("publish.max_inflight", p.MaxInflight)
	v.SetDefault("publish.message_bytes", p.MessageBytes)
	v.SetDefault("publish.retry_for", p.RetryFor)
	ic := ingest.DefaultConsumer
	v.SetDefault("ingest.durable", ic.Durable)
	v.SetDefault("ingest.fetch_bytes", ic.FetchBytes)
	v.SetDefault("ingest.max_wait", ic.MaxWait)
	v.SetDefault("ingest.ack_wait", ic.AckWait)
	v.SetDefault("ingest.member", ic.Member)
	v.SetDefault("ingest.lease", ic.Lease)
	sv := defaultServe
	for k, val := range map[string]any{"data_dir": sv.DataDir, "http": sv.HTTP, "flight": sv.Flight, "quiet": sv.Quiet, "timeout": sv.Timeout,
		"insecure": false, "archive": "", "archive_refresh": sv.ArchiveRefresh, "query_only": false, "checkpoint_wal": sv.CheckpointWAL, "staged": sv.Staged,
		"archive_s3.endpoint": "", "archive_s3.region": "", "archive_s3.insecure": false, "archive_s3.access_key": "", "archive_s3.secret_key": "", "query.timeout": sv.Query.Timeout, "query.max_rows": sv.Query.MaxRows, "query.memory_limit": "",
		"auth.token": "", "auth.token_file": "", "tls.cert": "", "tls.key": "", "tls.client_ca": ""} {
		v.SetDefault("serve."+k, val)
	}
	a := defaultAgent
	v.SetDefault("agent.poll", a.Poll)
	v.SetDefault("agent.settle", a.Settle)
	v.SetDefault("agent.give_up", a.GiveUp)
}

// loadConfig reads the config file (optional), the environment, and returns
// the merged configuration with every unknown key and bad value reported.
func loadConfig(path string) (*Config, error) {
	v := viper.New()
	v.SetEnvPrefix("TRAINSCOPE")
	v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
	v.AutomaticEnv()
	setDefaults(v)
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
