package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"
	"github.com/trainscope/trainscope/internal/server"
	"github.com/trainscope/trainscope/stream/transport"
)

// natsProbe is one column of the permission matrix: a publish or a
// subscription on a subject, which the server refuses or lets through.
type natsProbe struct {
	name string
	sub  bool // subscribe; else publish
	subj string
}

// The matrix's columns, as the README's security section states them.
// Subjects that would act (delete, purge, create) name a stream or
// consumer that does not exist, or carry a body JetStream refuses:
// permissions go by subject, and serve's own row must not break serve.
var natsProbes = []natsProbe{
	{"publish a batch (trace subject)", false, "trainscope.probe.run.host.slices"},
	{"publish with a sixth token (partition / forward)", false, "trainscope.probe.run.host.slices.to-probe"},
	{"publish elsewhere", false, "elsewhere.subject"},
	{"publish to serve's inbox (forge its replies)", false, transport.ServeInboxPrefix + ".probe"},
	{"publish an ack of the ingest consumer", false, "$JS.ACK.TRAINSCOPE.trainscope-ingest.1.999999.999999.0.0"},
	{"put into the run bucket (KV)", false, "$KV.trainscope_default_runs.run.probe"},
	{"put into the lease bucket (KV)", false, "$KV.trainscope_default_leases.part.0"},
	{"subscribe trace subjects", true, "trainscope.>"},
	{"subscribe everything", true, ">"},
	{"subscribe _INBOX.>", true, "_INBOX.>"},
	{"subscribe serve's inbox prefix", true, transport.ServeInboxPrefix + ".>"},
	{"subscribe acks", true, "$JS.ACK.>"},
	{"subscribe on-demand triggers", true, "trainscope-trigger.default.run"},
	{"send an on-demand trigger", false, "trainscope-trigger.default.run"},
	{"JetStream account info", false, "$JS.API.INFO"},
	{"stream info", false, "$JS.API.STREAM.INFO.TRAINSCOPE"},
	{"stream names / list", false, "$JS.API.STREAM.NAMES"},
	{"consumer create", false, "$JS.API.CONSUMER.CREATE.TRAINSCOPE.probe"},
	{"durable consumer create", false, "$JS.API.CONSUMER.DURABLE.CREATE.TRAINSCOPE.probe"},
	{"consumer list", false, "$JS.API.CONSUMER.LIST.TRAINSCOPE"},
	{"fetch / next from the ingest consumer", false, "$JS.API.CONSUMER.MSG.NEXT.TRAINSCOPE.trainscope-ingest"},
	{"consumer delete", false, "$JS.API.CONSUMER.DELETE.TRAINSCOPE.probe"},
	{"stream get msg", false, "$JS.API.STREAM.MSG.GET.TRAINSCOPE"},
	{"direct get", false, "$JS.API.DIRECT.GET.TRAINSCOPE"},
	{"stream purge", false, "$JS.API.STREAM.PURGE.PROBE"},
	{"stream delete", false, "$JS.API.STREAM.DELETE.PROBE"},
	{"stream update", false, "$JS.API.STREAM.UPDATE.PROBE"},
	{"KV get (run owners)", false, "$JS.API.DIRECT.GET.KV_trainscope_default_runs"},
	{"KV get (leases)", false, "$JS.API.STREAM.MSG.GET.KV_trainscope_default_leases"},
	{"KV watch (leases)", false, "$JS.API.CONSUMER.CREATE.KV_trainscope_default_leases.probe"},
}

// publisherMay are the columns a publisher identity may do: publish
// batches on five-token subjects, ask account and stream info, and
// receive its acknowledgements on _INBOX.>.
var publisherMay = map[string]bool{
	"publish a batch (trace subject)": true,
	"subscribe _INBOX.>":              true,
	"subscribe on-demand triggers":    true, // an agent with --on-demand answers them
	"JetStream account info":          true,
	"stream info":                     true,
}

// refused says whether the server refused p to the connection cfg makes:
// a refused publish or subscription comes back as a permissions
// violation, before the answer to the flush that follows it.
func refused(t *testing.T, cfg transport.NATSConfig, p natsProbe) bool {
	t.Helper()
	nc, err := transport.Connect(cfg, "probe")
	if err != nil {
		t.Fatalf("%s: connect: %v", p.name, err)
	}
	defer nc.Close()
	if p.sub {
		if _, err := nc.SubscribeSync(p.subj); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
	} else if err := nc.PublishRequest(p.subj, nc.NewInbox(), []byte("not a request")); err != nil {
		t.Fatalf("%s: %v", p.name, err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatalf("%s: flush: %v", p.name, err)
	}
	return errors.Is(nc.LastError(), nats.ErrPermissionViolation)
}

// checkMatrix probes every column for each identity and reports each cell
// that is not what the README promises.
func checkMatrix(t *testing.T, rows map[string]transport.NATSConfig, may func(row, column string) bool) {
	t.Helper()
	for row, cfg := range rows {
		for _, p := range natsProbes {
			if got, want := !refused(t, cfg, p), may(row, p.name); got != want {
				t.Errorf("%s may %q (%s): %v, want %v", row, p.name, p.subj, got, want)
			}
		}
	}
}

// Who may do what on serve's embedded NATS, as the permission matrix the
// README states: serve's own user everything; a publisher, whether a
// user/password or an NKey, publishes batches with acknowledgements and
// reads the stream's info, and nothing else. And the hole this closes: a
// publisher that subscribed to _INBOX.>, where serve's pull consumer used
// to receive its deliveries, got every batch of every run.
func TestServeNATSPermissionMatrix(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := serveConfig(t)
	cfg.NATS.Server.User, cfg.NATS.Server.Password = "agent", "agent-pw"
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	seed, _ := kp.Seed()
	seedFile := filepath.Join(t.TempDir(), "agent.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.NATS.Server.NKeys = []string{pub}
	srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	url := srv.NATSURL()
	in := srv.Embedded().Internal
	publisher := transport.NATSConfig{URL: url, User: "agent", Password: "agent-pw"}
	nkeyPublisher := transport.NATSConfig{URL: url, NKey: seedFile}
	checkMatrix(t, map[string]transport.NATSConfig{
		"serve (" + in.User + ")": {URL: url, User: in.User, Password: in.Password},
		"publisher (user)":        publisher,
		"publisher (nkey)":        nkeyPublisher,
	}, func(row, column string) bool { return strings.HasPrefix(row, "serve") || publisherMay[column] })
	// nobody without credentials
	for _, c := range []transport.NATSConfig{{URL: url}, {URL: url, User: in.User, Password: "guess"}} {
		if nc, err := transport.Connect(c, "intruder"); err == nil {
			nc.Close()
			t.Errorf("connected as %q without its password", c.User)
		}
	}

	// a publisher listens on _INBOX.> while a run is published (by the
	// nkey publisher) and ingested
	spyConn, err := transport.Connect(publisher, "spy")
	if err != nil {
		t.Fatal(err)
	}
	defer spyConn.Close()
	spy, err := spyConn.SubscribeSync("_INBOX.>")
	if err != nil {
		t.Fatal(err)
	}
	spy.SetPendingLimits(-1, -1)
	if err := spyConn.Flush(); err != nil || spyConn.LastError() != nil {
		t.Fatalf("subscribe _INBOX.>: %v %v", err, spyConn.LastError())
	}
	t.Setenv("TRAINSCOPE_NATS_NKEY", seedFile)
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"publish", "--run", "secret-run", "-q", "--nats-url", url}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("publish as the nkey publisher: exit %d: %s", code, errOut.String())
	}
	var sent int64
	if _, err := fmt.Sscanf(out.String()[strings.Index(out.String(), "rows in ")+len("rows in "):], "%d", &sent); err != nil || sent == 0 {
		t.Fatalf("publish said %q", out.String())
	}
	waitFor(t, "the run ingested", func() bool { return srv.Stats().Messages.Load() >= sent })
	// every delivery to serve happened before it committed; what the
	// server routed to the spy before its flush's answer has arrived
	if err := spyConn.Flush(); err != nil {
		t.Fatal(err)
	}
	leaked, acks := 0, 0
	for {
		m, err := spy.NextMsg(0)
		if err != nil {
			break
		}
		if strings.HasPrefix(m.Reply, "$JS.ACK.") || m.Header.Get(transport.HeaderTable) != "" || m.Header.Get(nats.MsgIdHdr) != "" {
			leaked++
		} else if strings.Contains(string(m.Data), `"stream":"TRAINSCOPE"`) {
			acks++
		}
	}
	if leaked > 0 {
		t.Errorf("a publisher subscribed to _INBOX.> received %d of the %d batches serve ingested", leaked, sent)
	}
	// what the README says is not defended: publishers share _INBOX.>, so
	// one sees another's acknowledgements (no contents)
	if acks == 0 {
		t.Errorf("the spy saw no publish acknowledgement of the other publisher: update the README's security section")
	}

	// a publisher still publishes with acknowledgements and reads the
	// stream's info
	nc, err := transport.Connect(publisher, "publisher")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, _ := jetstream.New(nc)
	short, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	if s, err := js.Stream(short, cfg.Stream.Name); err != nil || s.CachedInfo().Config.Name != cfg.Stream.Name {
		t.Errorf("stream info as the publisher: %v", err)
	}
	if ack, err := js.Publish(short, transport.Subject(cfg.Stream.Cluster, "acked", "h", "slices"), nil); err != nil || ack.Stream != cfg.Stream.Name {
		t.Errorf("publish with an acknowledgement as the publisher: %v %v", ack, err)
	}
}

// With client certificates as the only proof (nats.server.tls.client_ca),
// a client that shows one is a publisher, not serve's equal: it used to
// get every permission, reading every run included.
func TestServeNATSClientCertIsPublisher(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	ca, caKey := newCA(t)
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := write("ca.pem", pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Raw}))
	srvCert, srvKey := leafCert(t, ca, caKey, "server")
	cliCert, cliKey := leafCert(t, ca, caKey, "agent")
	cfg := serveConfig(t)
	cfg.NATS.Server.TLS.Cert, cfg.NATS.Server.TLS.Key = write("srv.pem", srvCert), write("srv.key", srvKey)
	cfg.NATS.Server.TLS.ClientCA = caFile
	srv, err := server.Start(ctx, cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	url := strings.Replace(srv.NATSURL(), "nats://", "tls://", 1)
	withCert := transport.NATSConfig{URL: url, TLS: transport.TLSConfig{CA: caFile, Cert: write("cli.pem", cliCert), Key: write("cli.key", cliKey)}}
	if nc, err := transport.Connect(transport.NATSConfig{URL: url, TLS: transport.TLSConfig{CA: caFile}}, "no-cert"); err == nil {
		nc.Close()
		t.Errorf("connected without a client certificate")
	}
	checkMatrix(t, map[string]transport.NATSConfig{"client certificate": withCert},
		func(_, column string) bool { return publisherMay[column] })
	// and it publishes a run that serve ingests
	t.Setenv("TRAINSCOPE_NATS_TLS_CA", withCert.TLS.CA)
	t.Setenv("TRAINSCOPE_NATS_TLS_CERT", withCert.TLS.Cert)
	t.Setenv("TRAINSCOPE_NATS_TLS_KEY", withCert.TLS.Key)
	var out, errOut bytes.Buffer
	if code := run(ctx, append([]string{"publish", "--run", "certified", "-q", "--nats-url", url}, sampleRun...), &out, &errOut); code != 0 {
		t.Fatalf("publish with a client certificate: exit %d: %s", code, errOut.String())
	}
	waitFor(t, "the run ingested", func() bool { return srv.Stats().Messages.Load() > 0 })
}

func newCA(t *testing.T) (*x509.Certificate, *ecdsa.PrivateKey) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trainscope test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return ca, key
}

// leafCert is a certificate for 127.0.0.1 signed by ca, good for a server
// and a client, and its key, both PEM.
func leafCert(t *testing.T, ca *x509.Certificate, caKey *ecdsa.PrivateKey, name string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, _ := rand.Int(rand.Reader, big.NewInt(1<<62))
	tmpl := &x509.Certificate{SerialNumber: serial, Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb})
}
