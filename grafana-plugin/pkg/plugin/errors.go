package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// problem is the kind of failure, for the health check's first words.
type problem int

const (
	problemQuery problem = iota
	problemUnreachable
	problemTLS
	problemAuth
	problemTimeout
	problemCancelled
	problemRefused
)

// classify reads a Flight SQL call's error and says what went wrong in
// words a Grafana admin can act on.
func classify(ctx context.Context, err error, s Settings) (problem, string) {
	if ctxErr := ctx.Err(); errors.Is(ctxErr, context.DeadlineExceeded) || status.Code(err) == codes.DeadlineExceeded {
		return problemTimeout, fmt.Sprintf("query to %s timed out after %s (jsonData.timeoutSeconds)", s.Address, s.Timeout())
	}
	st, ok := status.FromError(err)
	if !ok {
		if errors.Is(err, context.Canceled) {
			return problemCancelled, "query cancelled"
		}
		return problemQuery, fmt.Sprintf("flight sql %s: %v", s.Address, err)
	}
	msg := st.Message()
	lower := strings.ToLower(msg)
	switch st.Code() {
	case codes.Unavailable:
		switch {
		case strings.Contains(lower, "x509") || strings.Contains(lower, "certificate"):
			return problemTLS, fmt.Sprintf("TLS: the certificate of %s is not trusted: %s (set secureJsonData.tlsCACert to the CA that signed it, or jsonData.tlsServerName to the name in it)", s.Address, shortReason(msg))
		case strings.Contains(lower, "first record does not look like a tls handshake") || (s.TLS && strings.Contains(lower, "tls")):
			return problemTLS, fmt.Sprintf("TLS: %s does not speak TLS (%s); turn jsonData.tls off or point at the TLS port", s.Address, shortReason(msg))
		case !s.TLS && (strings.Contains(lower, "server preface") || strings.Contains(lower, "connection reset") || strings.Contains(lower, "eof")):
			return problemTLS, fmt.Sprintf("TLS: %s closed a plain connection (%s); it probably requires TLS: turn jsonData.tls on", s.Address, shortReason(msg))
		}
		return problemUnreachable, fmt.Sprintf("server unreachable at %s: %s (is 'trainscope serve --flight %s' running and reachable from Grafana?)", s.Address, shortReason(msg), s.Address)
	case codes.Unauthenticated:
		if s.Token == "" {
			return problemAuth, fmt.Sprintf("authentication: %s wants credentials and no token is set (secureJsonData.token): %s", s.Address, msg)
		}
		return problemAuth, fmt.Sprintf("authentication: %s refused the token (secureJsonData.token): %s", s.Address, msg)
	case codes.PermissionDenied:
		if strings.Contains(lower, "token") || strings.Contains(lower, "auth") || strings.Contains(lower, "credential") {
			return problemAuth, fmt.Sprintf("authentication: %s denied access: %s", s.Address, msg)
		}
		return problemRefused, "server refused: " + msg
	case codes.InvalidArgument:
		return problemQuery, "query failed: " + msg
	case codes.Canceled:
		return problemCancelled, "query cancelled"
	}
	return problemQuery, fmt.Sprintf("flight sql %s: %s: %s", s.Address, st.Code(), msg)
}

// describe maps an error to the status and message of a query's response.
func describe(ctx context.Context, err error, s Settings) (backend.Status, string) {
	p, msg := classify(ctx, err, s)
	switch p {
	case problemUnreachable, problemTLS:
		return backend.StatusBadGateway, msg
	case problemAuth:
		return backend.StatusUnauthorized, msg
	case problemTimeout:
		return backend.StatusTimeout, msg
	case problemRefused:
		return backend.StatusForbidden, msg
	}
	return backend.StatusBadRequest, msg
}

// shortReason cuts gRPC's `connection error: desc = "transport: Error
// while dialing: dial tcp 127.0.0.1:1: connect: connection refused"` to
// its last clause.
func shortReason(msg string) string {
	msg = strings.TrimSuffix(msg, `"`)
	if i := strings.LastIndex(msg, ": "); i >= 0 && strings.Contains(msg, "dial") {
		return msg[i+2:]
	}
	return msg
}
