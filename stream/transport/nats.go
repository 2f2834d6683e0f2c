package transport

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/trainscope/trainscope/stream"
)

// NATSConfig says where JetStream is. An empty URL means the embedded
// server that `trainscope serve` runs.
type NATSConfig struct {
	URL      string    `mapstructure:"url"`
	User     string    `mapstructure:"user"`
	Password string    `mapstructure:"password"`
	NKey     string    `mapstructure:"nkey"`  // path to an NKey seed file
	Creds    string    `mapstructure:"creds"` // path to a .creds file (JWT + seed)
	TLS      TLSConfig `mapstructure:"tls"`
	// Listen is the embedded server's client address; agents and publish
	// connect to it.
	Listen string `mapstructure:"listen"`
	// Server is who the embedded server lets in.
	Server ServerAuth `mapstructure:"server"`
}

// ServerAuth is who may connect to the embedded NATS server. With a user
// or NKeys set, every client must authenticate, and these identities have
// PublisherPermissions: publish batches, read the stream's info, receive
// their own publish acknowledgements; they cannot read batches, make or
// pull from consumers, or subscribe to the inboxes serve receives on
// (ServeInboxPrefix). serve's own connection uses a user of its own, made
// at each start. TLS encrypts; with ClientCA it also requires client
// certificates, and a client that proves itself with one alone gets
// PublisherPermissions too.
type ServerAuth struct {
	User     string   `mapstructure:"user"`
	Password string   `mapstructure:"password"`
	NKeys    []string `mapstructure:"nkeys"` // public keys (U...) of NKey users
	TLS      struct {
		Cert     string `mapstructure:"cert"`
		Key      string `mapstructure:"key"`
		ClientCA string `mapstructure:"client_ca"`
	} `mapstructure:"tls"`
}

// Authenticates says whether clients must prove who they are.
func (a ServerAuth) Authenticates() bool {
	return a.User != "" || len(a.NKeys) > 0 || a.TLS.ClientCA != ""
}

// TLSConfig are the client's TLS files; any of them turns TLS on.
type TLSConfig struct {
	CA   string `mapstructure:"ca"`
	Cert string `mapstructure:"cert"`
	Key  string `mapstructure:"key"`
}

// StreamConfig is the JetStream stream every batch goes to.
type StreamConfig struct {
	Name       string        `mapstructure:"name"`
	Cluster    string        `mapstructure:"cluster"` // the <cluster> token of subjects
	MaxAge     time.Duration `mapstructure:"max_age"`
	MaxBytes   int64         `mapstructure:"max_bytes"`
	Duplicates time.Duration `mapstructure:"duplicates"`
	Replicas   int           `mapstructure:"replicas"`
	// Partitions > 1 spreads runs over that many partitions, one lease
	// each, for several ingestors (see partition.go); 0 or 1: one
	// ingestor consumes everything.
	Partitions int `mapstructure:"partitions"`
	// Discard is what the stream does when it is full (MaxBytes): "new"
	// (the default) refuses the publish, so that the publisher retries and
	// then fails, and nothing unread is lost; "old" drops the oldest
	// messages, read or not, and the ingestor can only count what went
	// missing (see HeaderBatches). serve removes from the stream what it
	// has settled, so MaxBytes bounds how far ingest may fall behind.
	Discard string `mapstructure:"discard"`
}

// The values of StreamConfig.Discard.
const (
	DiscardNew = "new"
	DiscardOld = "old"
)

// DefaultNATS and DefaultStream need no file: an embedded server on the
// loopback port NATS clients expect, three days or 10 GiB of batches.
var (
	DefaultNATS   = NATSConfig{Listen: "127.0.0.1:4222"}
	DefaultStream = StreamConfig{Name: "TRAINSCOPE", Cluster: "default", MaxAge: 72 * time.Hour,
		MaxBytes: 10 << 30, Duplicates: 10 * time.Minute, Replicas: 1, Discard: DiscardNew}
)

// Validate reports every problem with its key path under prefix.
func (c NATSConfig) Validate(prefix string) error {
	var errs []error
	if c.URL != "" {
		for _, u := range strings.Split(c.URL, ",") {
			p, err := url.Parse(strings.TrimSpace(u))
			if err != nil || p.Host == "" {
				errs = append(errs, fmt.Errorf("%s.url: %q is not a URL like nats://host:4222", prefix, u))
			}
		}
	}
	if c.User != "" && c.Password == "" {
		errs = append(errs, fmt.Errorf("%s.password: required with %s.user", prefix, prefix))
	}
	n := 0
	for _, a := range []string{c.User, c.NKey, c.Creds} {
		if a != "" {
			n++
		}
	}
	if n > 1 {
		errs = append(errs, fmt.Errorf("%s: give one of user/password, nkey or creds", prefix))
	}
	for key, f := range map[string]string{"nkey": c.NKey, "creds": c.Creds, "tls.ca": c.TLS.CA, "tls.cert": c.TLS.Cert, "tls.key": c.TLS.Key} {
		if f != "" {
			if _, err := os.Stat(f); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %v", prefix, key, err))
			}
		}
	}
	if (c.TLS.Cert == "") != (c.TLS.Key == "") {
		errs = append(errs, fmt.Errorf("%s.tls: cert and key go together", prefix))
	}
	if c.Listen != "" {
		if _, _, err := net.SplitHostPort(c.Listen); err != nil {
			errs = append(errs, fmt.Errorf("%s.listen: %q is not host:port", prefix, c.Listen))
		}
	}
	sa := c.Server
	if (sa.User == "") != (sa.Password == "") {
		errs = append(errs, fmt.Errorf("%s.server: user and password go together", prefix))
	}
	for i, k := range sa.NKeys {
		if !nkeys.IsValidPublicUserKey(k) {
			errs = append(errs, fmt.Errorf("%s.server.nkeys[%d]: %q is not an NKey user public key (U...)", prefix, i, k))
		}
	}
	for key, f := range map[string]string{"server.tls.cert": sa.TLS.Cert, "server.tls.key": sa.TLS.Key, "server.tls.client_ca": sa.TLS.ClientCA} {
		if f != "" {
			if _, err := os.Stat(f); err != nil {
				errs = append(errs, fmt.Errorf("%s.%s: %v", prefix, key, err))
			}
		}
	}
	if (sa.TLS.Cert == "") != (sa.TLS.Key == "") {
		errs = append(errs, fmt.Errorf("%s.server.tls: cert and key go together", prefix))
	}
	if sa.TLS.ClientCA != "" && sa.TLS.Cert == "" {
		errs = append(errs, fmt.Errorf("%s.server.tls.client_ca: needs server.tls.cert and key", prefix))
	}
	return errors.Join(errs...)
}

// Validate reports every problem with its key path under prefix.
func (c StreamConfig) Validate(prefix string) error {
	var errs []error
	if c.Name == "" || strings.ContainsAny(c.Name, ". *>") {
		errs = append(errs, fmt.Errorf("%s.name: %q must be non-empty without dots, spaces or wildcards", prefix, c.Name))
	}
	if c.Cluster == "" || token(c.Cluster) != c.Cluster {
		errs = append(errs, fmt.Errorf("%s.cluster: %q must be non-empty with letters, digits, - and _ only", prefix, c.Cluster))
	}
	if c.MaxAge < 0 {
		errs = append(errs, fmt.Errorf("%s.max_age: negative", prefix))
	}
	if c.MaxBytes < 0 {
		errs = append(errs, fmt.Errorf("%s.max_bytes: negative", prefix))
	}
	if c.Duplicates <= 0 {
		errs = append(errs, fmt.Errorf("%s.duplicates: must be > 0 (the dedup window)", prefix))
	}
	if c.Replicas < 1 || c.Replicas > 5 {
		errs = append(errs, fmt.Errorf("%s.replicas: %d, want 1 to 5", prefix, c.Replicas))
	}
	if c.Partitions < 0 || c.Partitions > 1024 {
		errs = append(errs, fmt.Errorf("%s.partitions: %d, want 0 to 1024 (0 or 1: not partitioned)", prefix, c.Partitions))
	}
	if c.Discard != "" && c.Discard != DiscardNew && c.Discard != DiscardOld {
		errs = append(errs, fmt.Errorf("%s.discard: %q, want %q (refuse publishes when full) or %q (drop the oldest batches)", prefix, c.Discard, DiscardNew, DiscardOld))
	}
	return errors.Join(errs...)
}

// Subject is where a batch of table for run from host is published:
// trainscope.<cluster>.<run>.<host>.<table>. Characters NATS gives a
// meaning to become '_'; the exact run id and host travel in the batch.
func Subject(cluster, run, host, table string) string {
	return "trainscope." + token(cluster) + "." + token(run) + "." + token(host) + "." + token(table)
}

// SubjectRun is the run token of a subject made by Subject (or stored
// with a partition or forward token after it), or "".
func SubjectRun(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 && len(parts) != 6 {
		return ""
	}
	return parts[2]
}

// SubjectTable is the table token of a stored batch's subject, or "".
func SubjectTable(subject string) string {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 && len(parts) != 6 {
		return ""
	}
	return parts[4]
}

// token is a name as one subject token: RunToken's escaping, which the
// store and the detectors use without the transport (a run's token must be
// the same on both sides), applied to clusters, hosts, tables and members.
func token(s string) string { return stream.RunToken(s) }

// Embedded is a NATS server with JetStream inside this process.
type Embedded struct {
	*server.Server
	// Internal are the credentials this process connects with when the
	// server authenticates (empty otherwise).
	Internal NATSConfig
}

// StartEmbedded starts a JetStream server storing under dir and listening
// on listen ("127.0.0.1:0" picks a free port), open to anyone.
func StartEmbedded(dir, listen string) (*Embedded, error) {
	return StartEmbeddedAuth(dir, listen, ServerAuth{})
}

// StartEmbeddedAuth starts the server with auth's identities. When it
// authenticates, Embedded.Internal holds the credentials of a user made
// for this process, with every permission: serve connects with them.
func StartEmbeddedAuth(dir, listen string, auth ServerAuth) (*Embedded, error) {
	host, portStr, err := net.SplitHostPort(listen)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: listen %q: %w", listen, err)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: listen %q: bad port", listen)
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts := &server.Options{
		ServerName: "trainscope",
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   dir,
		NoSigs:     true,
		NoLog:      true,
		// Batches are up to 1 MiB plus headers.
		MaxPayload: 4 << 20,
	}
	e := &Embedded{}
	if auth.Authenticates() {
		internal, err := secret()
		if err != nil {
			return nil, err
		}
		e.Internal = NATSConfig{User: InternalUser, Password: internal}
		opts.Users = []*server.User{{Username: e.Internal.User, Password: e.Internal.Password}}
		if auth.User != "" {
			opts.Users = append(opts.Users, &server.User{Username: auth.User, Password: auth.Password, Permissions: PublisherPermissions()})
		}
		for _, k := range auth.NKeys {
			opts.Nkeys = append(opts.Nkeys, &server.NkeyUser{Nkey: k, Permissions: PublisherPermissions()})
		}
		if auth.User == "" && len(auth.NKeys) == 0 {
			// client certificates alone: a client that proves itself with
			// one and gives no user is a publisher, not serve's equal
			pw, err := secret()
			if err != nil {
				return nil, err
			}
			opts.Users = append(opts.Users, &server.User{Username: CertUser, Password: pw, Permissions: PublisherPermissions()})
			opts.NoAuthUser = CertUser
		}
	}
	if auth.TLS.Cert != "" {
		cfg, err := server.GenTLSConfig(&server.TLSConfigOpts{CertFile: auth.TLS.Cert, KeyFile: auth.TLS.Key,
			CaFile: auth.TLS.ClientCA, Verify: auth.TLS.ClientCA != ""})
		if err != nil {
			return nil, fmt.Errorf("embedded NATS: TLS: %w", err)
		}
		opts.TLSConfig, opts.TLS, opts.TLSVerify = cfg, true, auth.TLS.ClientCA != ""
	}
	s, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS: %w", err)
	}
	go s.Start()
	if !s.ReadyForConnections(15 * time.Second) {
		s.Shutdown()
		return nil, fmt.Errorf("embedded NATS did not start listening on %s within 15 s (is the port taken? set nats.listen)", listen)
	}
	e.Server = s
	return e, nil
}

// The embedded server's own users: serve's (every permission, a password
// made at each start) and, with client certificates as the only proof,
// the user a client that gives none becomes (PublisherPermissions).
const (
	InternalUser = "trainscope-serve"
	CertUser     = "trainscope-cert"
)

func secret() (string, error) {
	b := make([]byte, 24)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// ServeInboxPrefix is the inbox prefix of serve's own connection: its
// pull consumers' deliveries (every batch of every run), its JetStream
// API answers and its key-value reads arrive on subjects under it.
// Publishers may subscribe to _INBOX.> (their acknowledgements arrive
// there) but not to this.
const ServeInboxPrefix = "_INBOX_TRAINSCOPE_SERVE"

// PublisherPermissions are what an agent or publish needs and nothing
// more: publish batches on the five-token subjects Subject makes (not the
// sixth-token forms an ingestor stores or forwards), ask JetStream's
// account and stream info (publish checks the stream is there), and
// receive the acknowledgements on their own inboxes (_INBOX.>). No other
// subject: no consumer create, next or delete, no message get or direct
// get, no key-value bucket, no purge; and no subscription to the batches
// or to serve's inboxes.
//
// An agent with --on-demand also hears on-demand triggers (TriggerSubjects)
// and answers each once, to the asker's reply subject (a response
// permission: one message within a minute); it may not send a trigger.
func PublisherPermissions() *server.Permissions {
	return &server.Permissions{
		Publish: &server.SubjectPermission{Allow: []string{"trainscope.*.*.*.*", "$JS.API.INFO", "$JS.API.STREAM.INFO.*"}},
		Subscribe: &server.SubjectPermission{Allow: []string{"_INBOX.>", TriggerSubjects},
			Deny: []string{ServeInboxPrefix + ".>"}},
		Response: &server.ResponsePermission{MaxMsgs: 1, Expires: time.Minute},
	}
}

// TriggerSubjects are the subjects on-demand triggers travel on
// (internal/ondemand.TriggerRoot): core NATS, outside the stream.
const TriggerSubjects = "trainscope-trigger.>"

// URL is the embedded server's client URL.
func (e *Embedded) URL() string { return e.ClientURL() }

// Stop shuts the server down and waits for it.
func (e *Embedded) Stop() {
	e.Shutdown()
	e.WaitForShutdown()
}

// Connect opens a client connection that reconnects forever once it is
// up. The first connection is not retried: a server that is not there is
// an error now, naming the URL, rather than a hang. extra options come
// after the defaults (serve gives its inbox prefix, ServeInboxPrefix).
func Connect(cfg NATSConfig, name string, extra ...nats.Option) (*nats.Conn, error) {
	target := cfg.URL
	if target == "" {
		target = "nats://" + cfg.Listen
	}
	opts := []nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectBufSize(64 << 20),
		nats.Timeout(5 * time.Second),
	}
	switch {
	case cfg.User != "":
		opts = append(opts, nats.UserInfo(cfg.User, cfg.Password))
	case cfg.NKey != "":
		o, err := nats.NkeyOptionFromSeed(cfg.NKey)
		if err != nil {
			return nil, fmt.Errorf("nats.nkey %s: %w", cfg.NKey, err)
		}
		opts = append(opts, o)
	case cfg.Creds != "":
		opts = append(opts, nats.UserCredentials(cfg.Creds))
	}
	if cfg.TLS.CA != "" {
		opts = append(opts, nats.RootCAs(cfg.TLS.CA))
	}
	if cfg.TLS.Cert != "" {
		opts = append(opts, nats.ClientCert(cfg.TLS.Cert, cfg.TLS.Key))
	}
	nc, err := nats.Connect(target, append(opts, extra...)...)
	if err != nil {
		hint := "start 'trainscope serve' there, or set nats.url / TRAINSCOPE_NATS_URL / --nats-url"
		return nil, fmt.Errorf("cannot reach NATS at %s: %w (%s)", target, err, hint)
	}
	return nc, nil
}

// ConnectEmbedded connects this process to its own embedded server, in
// process (no socket, no TLS), with the server's internal credentials;
// extra options come after the defaults.
func ConnectEmbedded(e *Embedded, name string, extra ...nats.Option) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.InProcessServer(e.Server), nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond), nats.ReconnectBufSize(64 << 20), nats.Timeout(5 * time.Second)}
	if e.Internal.User != "" {
		opts = append(opts, nats.UserInfo(e.Internal.User, e.Internal.Password))
	}
	nc, err := nats.Connect("", append(opts, extra...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to the embedded NATS server: %w", err)
	}
	return nc, nil
}

// EnsureStream creates the stream, or updates its limits and discard
// policy (a stream made before stream.discard existed drops its oldest
// batches when full: it is switched to refusing new ones unless discard
// is "old"), and returns it. It captures every subject under
// trainscope.<cluster>; partitioned, it stores each batch with its run's
// partition as a sixth token.
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg StreamConfig) (jetstream.Stream, error) {
	discard := jetstream.DiscardNew
	if cfg.Discard == DiscardOld {
		discard = jetstream.DiscardOld
	}
	sc := jetstream.StreamConfig{
		Name:        cfg.Name,
		Description: "trainscope event batches (Arrow IPC)",
		Subjects:    []string{"trainscope." + token(cfg.Cluster) + ".>"},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      cfg.MaxAge,
		MaxBytes:    cmpOr(cfg.MaxBytes, -1),
		Duplicates:  cfg.Duplicates,
		Storage:     jetstream.FileStorage,
		Replicas:    max(cfg.Replicas, 1),
		Discard:     discard,
	}
	if cfg.Partitioned() {
		src, dst := cfg.subjectTransform()
		sc.SubjectTransform = &jetstream.SubjectTransformConfig{Source: src, Destination: dst}
		sc.Description += fmt.Sprintf(", runs in %d partitions", cfg.Partitions)
	}
	s, err := js.CreateOrUpdateStream(ctx, sc)
	if err != nil {
		return nil, fmt.Errorf("set up stream %s: %w", cfg.Name, err)
	}
	return s, nil
}

func cmpOr(v, def int64) int64 {
	if v == 0 {
		return def
	}
	return v
}

// CheckSubject says whether a batch of table and run may have come on
// subject: the subject's run and table tokens must be the ones Subject
// makes of them. A batch that says one run while its subject says another
// is refused: subjects are how a fleet is partitioned and secured.
func CheckSubject(subject, run, table string) error {
	parts := strings.Split(subject, ".")
	if len(parts) != 5 && len(parts) != 6 || parts[0] != "trainscope" {
		return fmt.Errorf("subject %q is not trainscope.<cluster>.<run>.<host>.<table>", subject)
	}
	if len(parts) == 6 {
		// stored with its partition, or forwarded to its run's owner
		if _, err := strconv.Atoi(parts[5]); err != nil && !strings.HasPrefix(parts[5], forwardPrefix) {
			return fmt.Errorf("subject %q: its sixth token is neither a partition nor to-<ingestor>", subject)
		}
	}
	if parts[4] != token(table) {
		return fmt.Errorf("subject %q carries table %s, the batch is %s", subject, parts[4], table)
	}
	if run != "" && parts[2] != token(run) {
		return fmt.Errorf("subject %q carries run %s, the batch's rows are of run %q", subject, parts[2], run)
	}
	return nil
}

// RunSubjects is the subject filter of every batch of run.
func RunSubjects(cluster, run string) string {
	return "trainscope." + token(cluster) + "." + token(run) + ".>"
}
