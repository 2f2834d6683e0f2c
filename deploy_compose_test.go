package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	natsserver "github.com/nats-io/nats-server/v2/server"
	"github.com/trainscope/trainscope/internal/config"
	"sigs.k8s.io/yaml"
)

// composeFile is the part of a compose file the test reads.
type composeFile struct {
	Services map[string]composeService `json:"services"`
	Secrets  map[string]struct {
		File string `json:"file"`
	} `json:"secrets"`
	Volumes map[string]any `json:"volumes"`
}

type composeService struct {
	Image       string            `json:"image"`
	Build       map[string]string `json:"build"`
	Command     []string          `json:"command"`
	Environment map[string]string `json:"environment"`
	Ports       []string          `json:"ports"`
	Volumes     []string          `json:"volumes"`
	Secrets     []string          `json:"secrets"`
	Entrypoint  []string          `json:"entrypoint"`
	DependsOn   any               `json:"depends_on"`
}

// deploy/compose starts what it says: three clustered NATS nodes whose
// config nats-server itself accepts, two ingestors and a query node whose
// mounted configs pass trainscope's validation and point at the services,
// ports, secrets and bucket that exist in the file, MinIO, and Grafana
// with the plugin and provisioning mounted from this repository. Where
// Docker Compose is installed, 'docker compose config' checks the file too.
func TestDeployCompose(t *testing.T) {
	dir := filepath.Join("deploy", "compose")
	raw, err := os.ReadFile(filepath.Join(dir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(raw, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	want := []string{"grafana", "ingest-0", "ingest-1", "minio", "minio-init", "nats-0", "nats-1", "nats-2", "query"}
	var got []string
	for name := range c.Services {
		got = append(got, name)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("services %v, want %v", got, want)
	}
	env := dotEnv(t, filepath.Join(dir, ".env"))
	for name, s := range c.Services {
		if s.Image == "" || !strings.Contains(s.Image, ":") || strings.HasSuffix(s.Image, ":latest") {
			t.Errorf("%s: image %q: want a pinned tag", name, s.Image)
		}
		for _, v := range s.Volumes {
			src, _, _ := strings.Cut(v, ":")
			switch {
			case strings.HasPrefix(src, "."):
				if src == "../../grafana-plugin/dist" { // built by 'make plugin'
					src = "../../grafana-plugin/src/plugin.json"
				}
				if _, err := os.Stat(filepath.Join(dir, src)); err != nil {
					t.Errorf("%s mounts %s: %v", name, v, err)
				}
			default:
				if _, ok := c.Volumes[src]; !ok {
					t.Errorf("%s mounts volume %s, which the file does not declare", name, src)
				}
			}
		}
		for _, sec := range s.Secrets {
			f, ok := c.Secrets[sec]
			if !ok {
				t.Errorf("%s uses secret %s, which the file does not declare", name, sec)
			} else if _, err := os.Stat(filepath.Join(dir, f.File)); err != nil {
				t.Errorf("secret %s: %v", sec, err)
			}
		}
		for k, v := range s.Environment {
			for _, ref := range []string{"NATS_PASSWORD", "MINIO_ROOT_USER", "MINIO_ROOT_PASSWORD"} {
				if strings.Contains(v, "${"+ref+"}") && env[ref] == "" {
					t.Errorf("%s: %s uses ${%s}, which .env does not set", name, k, ref)
				}
			}
		}
	}

	// NATS: each node's config is one nats-server accepts, clustered with
	// the other two on their service names
	for _, name := range []string{"nats-0", "nats-1", "nats-2"} {
		s := c.Services[name]
		for k, v := range s.Environment {
			t.Setenv(k, os.Expand(v, func(k string) string { return env[k] }))
		}
		conf := hostPath(t, dir, s, "/etc/nats/nats.conf")
		opts, err := natsserver.ProcessConfigFile(conf)
		if err != nil {
			t.Fatalf("%s: nats-server refuses %s: %v", name, conf, err)
		}
		if opts.ServerName != name || !opts.JetStream || opts.Port != 4222 || opts.Cluster.Port != 6222 || opts.MaxPayload < 4<<20 {
			t.Errorf("%s: server %q, jetstream %v, port %d, cluster port %d, max payload %d", name, opts.ServerName, opts.JetStream, opts.Port, opts.Cluster.Port, opts.MaxPayload)
		}
		var peers []string
		for _, r := range opts.Routes {
			host, port, _ := net.SplitHostPort(r.Host)
			if _, ok := c.Services[host]; !ok || port != "6222" {
				t.Errorf("%s: route %s is no service's cluster port", name, r)
			}
			peers = append(peers, host)
		}
		if slices.Sort(peers); !slices.Equal(peers, []string{"nats-0", "nats-1", "nats-2"}) {
			t.Errorf("%s routes to %v", name, peers)
		}
		if len(opts.Users) != 1 || opts.Users[0].Password != env["NATS_PASSWORD"] {
			t.Errorf("%s: users %v: want the trainscope user with .env's password", name, opts.Users)
		}
	}

	// trainscope: every config it mounts passes validation and names what
	// the file provides
	token, err := os.ReadFile(filepath.Join(dir, c.Secrets["flight_token"].File))
	if err != nil {
		t.Fatal(err)
	}
	members := map[string]bool{}
	for _, name := range []string{"ingest-0", "ingest-1", "query"} {
		s := c.Services[name]
		if s.Image != c.Services["ingest-0"].Image || s.Command[0] != "serve" {
			t.Errorf("%s: image %s, command %v", name, s.Image, s.Command)
		}
		i := slices.Index(s.Command, "--config")
		if i < 0 {
			t.Fatalf("%s: no --config in %v", name, s.Command)
		}
		for k, v := range s.Environment {
			t.Setenv(k, os.Expand(v, func(k string) string { return env[k] }))
		}
		cfg := validConfig(t, hostPath(t, dir, s, s.Command[i+1]),
			"/run/secrets/flight_token", filepath.Join(dir, c.Secrets["flight_token"].File))
		for k := range s.Environment {
			os.Unsetenv(k)
		}
		if name == "query" {
			if !cfg.Serve.QueryOnly {
				t.Error("query: not --query-only")
			}
		} else {
			members[cfg.Ingest.Member] = true
			if cfg.Stream.Partitions < 2 || cfg.Stream.Replicas != 3 || cfg.NATS.Password != env["NATS_PASSWORD"] {
				t.Errorf("%s: partitions %d, replicas %d, NATS password from env %v", name, cfg.Stream.Partitions, cfg.Stream.Replicas, cfg.NATS.Password != "")
			}
			for _, u := range strings.Split(cfg.NATS.URL, ",") {
				host, port, _ := net.SplitHostPort(strings.TrimPrefix(u, "nats://"))
				if !strings.HasPrefix(host, "nats-") || port != "4222" || c.Services[host].Image == "" {
					t.Errorf("%s: nats.url %s is no NATS service", name, u)
				}
			}
		}
		if cfg.Serve.Archive != "s3://trainscope/archive" || cfg.Serve.ArchiveS3.Endpoint != "minio:9000" || !slices.Contains(c.Services["minio"].Ports, "9000:9000") {
			t.Errorf("%s: archive %s at %s: want the bucket minio-init makes, on minio:9000", name, cfg.Serve.Archive, cfg.Serve.ArchiveS3.Endpoint)
		}
		if !strings.Contains(strings.Join(c.Services["minio-init"].Entrypoint, " "), "mb --ignore-existing fleet/trainscope") {
			t.Error("minio-init does not make the archive's bucket")
		}
		if s.Environment["AWS_ACCESS_KEY_ID"] != "${MINIO_ROOT_USER}" {
			t.Errorf("%s: the archive keys are not MinIO's", name)
		}
		if f := tokenFile(t, hostPath(t, dir, s, s.Command[i+1])); f != "/run/secrets/flight_token" || !slices.Contains(s.Secrets, "flight_token") {
			t.Errorf("%s: token file %s is not its secret flight_token (%v)", name, f, s.Secrets)
		}
		_, httpPort, _ := net.SplitHostPort(cfg.Serve.HTTP)
		_, flightPort, _ := net.SplitHostPort(cfg.Serve.Flight)
		for _, p := range s.Ports {
			if _, target, _ := strings.Cut(p, ":"); target != httpPort && target != flightPort {
				t.Errorf("%s publishes %s, which serve does not listen on (%s, %s)", name, p, httpPort, flightPort)
			}
		}
		if name == "query" {
			g := c.Services["grafana"].Environment
			if g["TRAINSCOPE_FLIGHT_ADDR"] != "query:"+flightPort {
				t.Errorf("grafana reads Flight SQL at %s, the query node listens on %s", g["TRAINSCOPE_FLIGHT_ADDR"], flightPort)
			}
		}
	}

	// Grafana's data source sends the token the servers check: read from
	// the same secret file, never written in compose.yaml
	if strings.Contains(string(raw), strings.TrimSpace(string(token))) {
		t.Errorf("compose.yaml holds flight_token's token %q: read it from the secret", strings.TrimSpace(string(token)))
	}
	if got := grafanaToken(t, dir, c, env); got != strings.TrimSpace(string(token)) {
		t.Errorf("grafana's TRAINSCOPE_TOKEN is %q, not the token in flight_token", got)
	}
	if len(members) != 2 {
		t.Errorf("ingestor members %v: want two distinct", members)
	}
	if _, err := os.Stat(filepath.Join("deploy", "Dockerfile")); err != nil {
		t.Errorf("the ingestors build deploy/Dockerfile: %v", err)
	}

	if out, err := exec.Command("docker", "compose", "version").CombinedOutput(); err != nil {
		t.Logf("docker compose is not installed here (%s): the file was checked by parsing only", strings.TrimSpace(string(out)))
		return
	}
	cmd := exec.CommandContext(context.Background(), "docker", "compose", "-f", filepath.Join(dir, "compose.yaml"), "config", "-q")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("docker compose config: %v\n%s", err, out)
	}
}

// hostPath is the file on this machine that service s mounts at target.
func hostPath(t *testing.T, dir string, s composeService, target string) string {
	t.Helper()
	for _, v := range s.Volumes {
		parts := strings.Split(v, ":")
		if len(parts) >= 2 && parts[1] == target {
			return filepath.Join(dir, parts[0])
		}
	}
	t.Fatalf("nothing is mounted at %s (volumes %v)", target, s.Volumes)
	return ""
}

// validConfig loads a config file as serve would and fails the test
// unless it passes validation. mounts are pairs of a path in the
// container and the file here that is mounted there (a secret).
func validConfig(t *testing.T, path string, mounts ...string) *config.Config {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	for i := 0; i+1 < len(mounts); i += 2 {
		abs, _ := filepath.Abs(mounts[i+1])
		text = strings.ReplaceAll(text, mounts[i], abs)
	}
	here := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(here, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(here)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg
}

// dotEnv reads a compose .env file.
func dotEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	env := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(l), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	return env
}

// tokenFile is serve.auth.token_file as a config file writes it.
func tokenFile(t *testing.T, path string) string {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Serve struct {
			Auth struct {
				TokenFile string `json:"token_file"`
			} `json:"auth"`
		} `json:"serve"`
	}
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return cfg.Serve.Auth.TokenFile
}

// grafanaToken is the TRAINSCOPE_TOKEN that Grafana's provisioned data
// source expands: its entrypoint, as compose interpolates it, is run here
// by sh with the flight_token secret at the path compose mounts it and
// Grafana's own entrypoint (/run.sh) replaced by printenv.
func grafanaToken(t *testing.T, dir string, c composeFile, env map[string]string) string {
	t.Helper()
	g := c.Services["grafana"]
	prov, err := os.ReadFile(filepath.Join("deploy", "grafana", "provisioning", "datasources", "trainscope.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(prov), "${TRAINSCOPE_TOKEN") || !slices.Contains(g.Volumes, "../grafana/provisioning:/etc/grafana/provisioning:ro") {
		t.Error("grafana: the provisioned data source should read its token from TRAINSCOPE_TOKEN")
	}
	if v, ok := g.Environment["TRAINSCOPE_TOKEN"]; ok {
		t.Errorf("grafana: TRAINSCOPE_TOKEN is written in the file (%q): read it from the secret flight_token", v)
		return v
	}
	if !slices.Contains(g.Secrets, "flight_token") {
		t.Errorf("grafana: secrets %v: want flight_token, the servers' token file", g.Secrets)
		return ""
	}
	if len(g.Entrypoint) != 3 || g.Entrypoint[0] != "/bin/sh" || g.Entrypoint[1] != "-c" {
		t.Errorf("grafana: entrypoint %q: want /bin/sh -c reading the secret, then exec /run.sh", g.Entrypoint)
		return ""
	}
	script, err := composeInterpolate(g.Entrypoint[2], env)
	if err != nil {
		t.Errorf("grafana entrypoint: %v", err)
		return ""
	}
	script = strings.TrimSpace(script)
	if !strings.HasSuffix(script, "exec /run.sh") {
		t.Errorf("grafana: entrypoint %q does not end by starting Grafana (exec /run.sh)", script)
		return ""
	}
	secret, _ := filepath.Abs(filepath.Join(dir, c.Secrets["flight_token"].File))
	script = strings.ReplaceAll(script, "/run/secrets/flight_token", secret)
	script = strings.TrimSuffix(script, "/run.sh") + "printenv TRAINSCOPE_TOKEN"
	out, err := exec.Command("/bin/sh", "-c", script).Output()
	if err != nil {
		t.Errorf("grafana entrypoint, run here as %q: %v", script, err)
	}
	return strings.TrimSpace(string(out))
}

// composeInterpolate does to a value what compose does: $$ is a $;
// ${NAME} and $NAME come from .env.
func composeInterpolate(s string, env map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		switch rest := s[i+1:]; {
		case strings.HasPrefix(rest, "$"):
			b.WriteByte('$')
			i++
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return "", fmt.Errorf("unclosed ${ in %q", s)
			}
			name := rest[1:end]
			if _, ok := env[name]; !ok {
				return "", fmt.Errorf("%q: compose would expand ${%s}, which .env does not set (write $$ for a $)", s, name)
			}
			b.WriteString(env[name])
			i += end + 1
		default:
			n := 0
			for n < len(rest) && (rest[n] == '_' || rest[n] >= 'A' && rest[n] <= 'Z' || rest[n] >= 'a' && rest[n] <= 'z' || n > 0 && rest[n] >= '0' && rest[n] <= '9') {
				n++
			}
			if n == 0 {
				b.WriteByte('$')
				continue
			}
			if _, ok := env[rest[:n]]; !ok {
				return "", fmt.Errorf("%q: compose would expand $%s, which .env does not set (write $$ for a $)", s, rest[:n])
			}
			b.WriteString(env[rest[:n]])
			i += n
		}
	}
	return b.String(), nil
}
