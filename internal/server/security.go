package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/internal/config"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

// startFlight serves read-only Flight SQL on addr over st, with the
// server's query limits, token and TLS; each query runs on a reader
// connection of its own, beside the ingestor's writes.
//
// Beside an ingestor, the database is first shut off from every file but
// its own and its staged files (flightsrv.Lockdown), which DuckDB then
// refuses to any query that got past the read-only checks. Its settings
// stay unlocked: the ingestor raises memory_limit for large batches, and
// DuckDB's lock binds every connection. A query node (serve.query_only)
// locks its database, settings included, where it opens it.
func startFlight(ctx context.Context, cfg config.ServeConfig, sec *serveSecurity, st *duck.Store, logf func(string, ...any)) (string, func() error, error) {
	if !cfg.QueryOnly {
		if err := (flightsrv.Lockdown{Dirs: []string{st.StagedDir()}}).Apply(ctx, st); err != nil {
			return "", nil, err
		}
	}
	a, stop, err := flightsrv.Serve(ctx, cfg.Flight, st, flightsrv.Options{Logf: logf,
		Timeout: cfg.Query.Timeout, MaxRows: cfg.Query.MaxRows, Token: sec.token, TLS: sec.tls})
	if err != nil {
		return "", nil, err
	}
	return a.String(), stop, nil
}

// listenerSecurity loads what serve's listeners ask of clients and checks
// that they may listen where the config says.
func listenerSecurity(cfg *config.Config) (*serveSecurity, error) {
	sec, err := loadServeSecurity(cfg.Serve)
	if err != nil {
		return nil, &config.Error{Err: err}
	}
	if err := checkListeners(cfg, sec); err != nil {
		return nil, &config.Error{Err: fmt.Errorf("serve: %w", err)}
	}
	return sec, nil
}

// serveSecurity is what serve's listeners ask of clients: a bearer token
// (Flight SQL and HTTP), TLS, client certificates.
type serveSecurity struct {
	token string
	tls   *tls.Config // nil: plain
}

// authenticates says whether Flight SQL and HTTP clients must prove who
// they are.
func (s *serveSecurity) authenticates() bool {
	return s.token != "" || (s.tls != nil && s.tls.ClientAuth == tls.RequireAndVerifyClientCert)
}

func loadServeSecurity(cfg config.ServeConfig) (*serveSecurity, error) {
	sec := &serveSecurity{token: cfg.Auth.Token}
	if cfg.Auth.TokenFile != "" {
		b, err := os.ReadFile(cfg.Auth.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("serve.auth.token_file: %w", err)
		}
		sec.token = strings.TrimSpace(string(b))
		if sec.token == "" {
			return nil, fmt.Errorf("serve.auth.token_file: %s is empty", cfg.Auth.TokenFile)
		}
	}
	if cfg.TLS.Cert != "" {
		cert, err := tls.LoadX509KeyPair(cfg.TLS.Cert, cfg.TLS.Key)
		if err != nil {
			return nil, fmt.Errorf("serve.tls: %w", err)
		}
		sec.tls = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if cfg.TLS.ClientCA != "" {
			pem, err := os.ReadFile(cfg.TLS.ClientCA)
			if err != nil {
				return nil, fmt.Errorf("serve.tls.client_ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("serve.tls.client_ca: %s holds no PEM certificate", cfg.TLS.ClientCA)
			}
			sec.tls.ClientCAs, sec.tls.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
	}
	return sec, nil
}

// checkListeners refuses to open a port beyond loopback that anyone could
// use, unless serve.insecure says so: the embedded NATS (publish, and
// with full rights delete the ingest consumer), Flight SQL (read every
// run) and HTTP (reports, metrics).
func checkListeners(cfg *config.Config, sec *serveSecurity) error {
	if cfg.Serve.Insecure {
		return nil
	}
	type listener struct{ key, addr, fix string }
	var ls []listener
	if cfg.NATS.URL == "" && !cfg.NATS.Server.Authenticates() {
		ls = append(ls, listener{"nats.listen", cfg.NATS.Listen, "set nats.server.user and password, or nats.server.nkeys"})
	}
	if !sec.authenticates() {
		ls = append(ls, listener{"serve.http", cfg.Serve.HTTP, "set serve.auth.token_file (or serve.tls.client_ca)"})
		if cfg.Serve.Flight != "" {
			ls = append(ls, listener{"serve.flight", cfg.Serve.Flight, "set serve.auth.token_file (or serve.tls.client_ca)"})
		}
	}
	var errs []error
	for _, l := range ls {
		if !loopback(l.addr) {
			errs = append(errs, fmt.Errorf("%s %s would let anyone who reaches this machine in without credentials: %s, or set serve.insecure (--insecure) to accept that", l.key, l.addr, l.fix))
		}
	}
	return errors.Join(errs...)
}

// loopback says whether a listen address only takes connections from this
// machine.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// defaultMemoryLimit is the serving database's memory limit when none is
// configured: a quarter of this machine's memory (DuckDB's own default is
// 80%, which one query once used up to 4.3 GB of).
func defaultMemoryLimit() string {
	m := config.MachineMemory()
	if m <= 0 {
		return "2GB"
	}
	return strconv.FormatInt(max(m/4>>20, 256), 10) + "MiB"
}
