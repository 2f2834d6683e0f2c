package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// ID is the plugin id in plugin.json.
const ID = "trainscope-trainscope-datasource"

// Defaults for settings left empty.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultRowLimit = 100000
)

// Settings are one data source instance's settings.
type Settings struct {
	Address       string `json:"address"`
	TLS           bool   `json:"tls"`
	TLSSkipVerify bool   `json:"tlsSkipVerify"`
	TLSServerName string `json:"tlsServerName"`
	TimeoutSec    int    `json:"timeoutSeconds"`
	RowLimit      int64  `json:"rowLimit"`

	Token     string `json:"-"` // secureJsonData.token
	TLSCACert string `json:"-"` // secureJsonData.tlsCACert
}

// Timeout is the per-query deadline.
func (s Settings) Timeout() time.Duration {
	if s.TimeoutSec <= 0 {
		return DefaultTimeout
	}
	return time.Duration(s.TimeoutSec) * time.Second
}

// Limit is the default row limit per query.
func (s Settings) Limit() int64 {
	if s.RowLimit <= 0 {
		return DefaultRowLimit
	}
	return s.RowLimit
}

// LoadSettings reads an instance's jsonData and secureJsonData and
// normalises the address: grpc+tls:// turns TLS on, grpc:// and
// grpc+tcp:// are stripped.
func LoadSettings(raw backend.DataSourceInstanceSettings) (Settings, error) {
	var s Settings
	if len(raw.JSONData) > 0 {
		if err := json.Unmarshal(raw.JSONData, &s); err != nil {
			return s, fmt.Errorf("data source settings (jsonData): %w", err)
		}
	}
	s.Token = strings.TrimSpace(raw.DecryptedSecureJSONData["token"])
	s.TLSCACert = raw.DecryptedSecureJSONData["tlsCACert"]
	if s.Address == "" {
		s.Address = raw.URL
	}
	s.Address = strings.TrimSpace(s.Address)
	switch {
	case strings.HasPrefix(s.Address, "grpc+tls://"):
		s.TLS = true
		s.Address = strings.TrimPrefix(s.Address, "grpc+tls://")
	case strings.HasPrefix(s.Address, "grpc+tcp://"):
		s.Address = strings.TrimPrefix(s.Address, "grpc+tcp://")
	case strings.HasPrefix(s.Address, "grpc://"):
		s.Address = strings.TrimPrefix(s.Address, "grpc://")
	}
	return s, s.Validate()
}

// Validate reports every problem at once, each with its key.
func (s Settings) Validate() error {
	var errs []error
	if s.Address == "" {
		errs = append(errs, errors.New("jsonData.address: empty; set it to the Flight SQL address of 'trainscope serve' (host:port, e.g. localhost:7071)"))
	} else if strings.Contains(s.Address, "://") {
		errs = append(errs, fmt.Errorf("jsonData.address: %q: use host:port, grpc://host:port or grpc+tls://host:port", s.Address))
	} else if !strings.Contains(s.Address, ":") {
		errs = append(errs, fmt.Errorf("jsonData.address: %q has no port (host:port)", s.Address))
	}
	if s.TimeoutSec < 0 {
		errs = append(errs, fmt.Errorf("jsonData.timeoutSeconds: %d is negative", s.TimeoutSec))
	}
	if s.RowLimit < 0 {
		errs = append(errs, fmt.Errorf("jsonData.rowLimit: %d is negative", s.RowLimit))
	}
	if !s.TLS && (s.TLSCACert != "" || s.TLSSkipVerify || s.TLSServerName != "") {
		errs = append(errs, errors.New("jsonData.tls: TLS options are set but TLS is off; turn it on or clear them"))
	}
	return errors.Join(errs...)
}
