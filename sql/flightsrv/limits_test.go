package flightsrv_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

func serveWith(t *testing.T, opts flightsrv.Options) string {
	t.Helper()
	st, err := duck.Open(context.Background(), "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	addr, stop, err := flightsrv.Serve(context.Background(), "127.0.0.1:0", st, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stop() })
	return addr.String()
}

// A result past the row limit stops there with an error that names the
// limit (the client holds what came before it); a query past the time
// limit is interrupted, not left running (one query once took a server
// to 4.3 GB).
func TestQueryLimits(t *testing.T) {
	addr := serveWith(t, flightsrv.Options{MaxRows: 2500, Timeout: 300 * time.Millisecond})
	var rows int64
	err := flightsrv.Dialer{}.Stream(context.Background(), addr, "SELECT range AS i FROM range(100000)", func(_ *arrow.Schema, rec arrow.RecordBatch) error {
		if rec != nil {
			rows += rec.NumRows()
		}
		return nil
	})
	if err == nil || !strings.Contains(err.Error(), "more than 2500 rows") || !strings.Contains(err.Error(), "serve.query.max_rows") {
		t.Errorf("over the row limit: %v", err)
	}
	if rows != 2500 {
		t.Errorf("%d rows arrived before the error, want exactly the limit, 2500", rows)
	}
	if res, err := flightsrv.Query(context.Background(), addr, "SELECT range AS i FROM range(2500)"); err != nil || res.NumRows() != 2500 {
		t.Errorf("at the row limit: %v", err)
	}
	t0 := time.Now()
	_, err = flightsrv.Query(context.Background(), addr, "SELECT count(*) FROM range(100000000000) a WHERE a.range % 7 = 3")
	if err == nil || !strings.Contains(err.Error(), "serve.query.timeout") {
		t.Errorf("past the time limit: %v", err)
	}
	if took := time.Since(t0); took > 30*time.Second {
		t.Errorf("the query ran %s after its 300 ms limit: it was not interrupted", took)
	}
}

// With a token, every call needs it; the error says what is missing.
func TestTokenAndTLS(t *testing.T) {
	certFile, keyFile, caPEM := selfSigned(t)
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	addr := serveWith(t, flightsrv.Options{Token: "s3cret", TLS: &tls.Config{Certificates: []tls.Certificate{cert}}})
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, caPEM, 0o600)

	for _, c := range []struct {
		name string
		d    flightsrv.Dialer
		addr string
		want string
	}{
		{"plain gRPC to a TLS server", flightsrv.Dialer{Token: "s3cret"}, addr, "use grpc+tls://"},
		{"no token", flightsrv.Dialer{CAFile: caFile}, addr, "missing bearer token"},
		{"wrong token", flightsrv.Dialer{CAFile: caFile, Token: "nope"}, addr, "invalid bearer token"},
		{"untrusted certificate", flightsrv.Dialer{Token: "s3cret"}, "grpc+tls://" + addr, "certificate"},
	} {
		if _, err := c.d.Query(context.Background(), c.addr, "SELECT 1"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error mentioning %q", c.name, err, c.want)
		}
	}
	res, err := flightsrv.Dialer{CAFile: caFile, Token: "s3cret"}.Query(context.Background(), addr, "SELECT 42 AS x")
	if err != nil || res.NumRows() != 1 {
		t.Fatalf("with the token over TLS: %v", err)
	}
}

// selfSigned writes a certificate for 127.0.0.1 and its key, and returns
// their files and the certificate in PEM (its own CA).
func selfSigned(t *testing.T) (string, string, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trainscope test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, certPEM, 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	return certFile, keyFile, certPEM
}
