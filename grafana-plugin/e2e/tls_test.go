//go:build duckdb_arrow

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/trainscope/trainscope/sql/flightsrv"
)

const token = "s3cret-token"

// secureServer serves the demo store over Flight SQL with TLS and a bearer
// token, as the endpoint looks behind a TLS-terminating, authenticating
// proxy. It returns the address and the CA certificate in PEM.
func secureServer(t *testing.T) (string, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "trainscope test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert := tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
	caPEM := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))

	check := func(ctx context.Context) error {
		md, _ := metadata.FromIncomingContext(ctx)
		got := md.Get("authorization")
		switch {
		case len(got) == 0:
			return status.Error(codes.Unauthenticated, "missing bearer token")
		case got[0] != "Bearer "+token:
			return status.Error(codes.Unauthenticated, "invalid bearer token")
		}
		return nil
	}
	gs := grpc.NewServer(
		grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{cert}})),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			if err := check(ctx); err != nil {
				return nil, err
			}
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			if err := check(ss.Context()); err != nil {
				return err
			}
			return h(srv, ss)
		}),
	)
	srv, err := flightsrv.NewServer(store, flightsrv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	flight.RegisterFlightServiceServer(gs, flightsql.NewFlightServer(srv))
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go gs.Serve(lis)
	t.Cleanup(gs.Stop)
	return lis.Addr().String(), caPEM
}

func TestTLSAndToken(t *testing.T) {
	ctx := context.Background()
	addr, ca := secureServer(t)
	good := dsConfig{id: 100, jsonData: map[string]any{"address": "grpc+tls://" + addr, "timeoutSeconds": 5},
		secure: map[string]string{"tlsCACert": ca, "token": token}}

	if r := plug.health(ctx, t, good); r.Status != backend.HealthStatusOk || !strings.Contains(r.Message, fmt.Sprintf("%d runs, %d findings", storeCount(t, "SELECT count(*) FROM runs"), storeCount(t, "SELECT count(*) FROM findings"))) {
		t.Fatalf("TLS with CA and token: %v %q", r.Status, r.Message)
	}
	resp := plug.query(ctx, t, good, demoRange(), map[string]any{"queryType": "findings", "run": "demo", "severity": "critical"})
	if f, want := frameOf(t, resp, "A"), storeCount(t, "SELECT count(*) FROM findings WHERE run_id = 'demo' AND severity = 'critical'"); int64(f.Rows()) != want || want == 0 {
		t.Errorf("critical findings over TLS = %d, the store has %d", f.Rows(), want)
	}

	for _, c := range []struct {
		name   string
		id     int64
		json   map[string]any
		secure map[string]string
		want   string
	}{
		{"no token", 101, map[string]any{"address": addr, "tls": true}, map[string]string{"tlsCACert": ca},
			"authentication: " + addr + " wants credentials and no token is set (secureJsonData.token): missing bearer token"},
		{"wrong token", 102, map[string]any{"address": addr, "tls": true}, map[string]string{"tlsCACert": ca, "token": "nope"},
			"authentication: " + addr + " refused the token (secureJsonData.token): invalid bearer token"},
		{"untrusted certificate", 103, map[string]any{"address": addr, "tls": true}, map[string]string{"token": token},
			"TLS: the certificate of " + addr + " is not trusted"},
		{"plain to TLS", 104, map[string]any{"address": addr}, map[string]string{"token": token},
			"it probably requires TLS: turn jsonData.tls on"},
	} {
		c.json["timeoutSeconds"] = 5
		r := plug.health(ctx, t, dsConfig{id: c.id, jsonData: c.json, secure: c.secure})
		if r.Status != backend.HealthStatusError || !strings.Contains(r.Message, c.want) {
			t.Errorf("%s: %v %q\nwant it to contain %q", c.name, r.Status, r.Message, c.want)
		}
	}
}
