package server

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/trainscope/trainscope/internal/ondemand"
	"github.com/trainscope/trainscope/internal/ondemand/odwire"
)

// POST /runs/{id}/trigger asks the run's agents over NATS and answers
// with their replies; it takes the server's token like every endpoint.
// The agent holds publisher credentials, as on a locked-down NATS.
func TestTriggerEndpoint(t *testing.T) {
	cfg := testConfig(t)
	cfg.Serve.Flight = ""
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte("s3cret\n"), 0o600)
	cfg.Serve.Auth.TokenFile = tokenFile
	// NATS locked down: the agent is a publisher, and may still hear a
	// trigger and answer it (to serve's own inbox)
	cfg.NATS.Server.User, cfg.NATS.Server.Password = "agent", "pw"
	srv, err := Start(context.Background(), cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()

	// a stand-in agent of run job7 on node-3: it answers every trigger
	nc, err := nats.Connect(srv.NATSURL(), nats.UserInfo("agent", "pw"))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	got := make(chan ondemand.TriggerMessage, 4)
	sub, err := nc.Subscribe(ondemand.TriggerSubject(cfg.Stream.Cluster, "job7"), func(msg *nats.Msg) {
		m, err := ondemand.DecodeTrigger(msg.Data, ondemand.Limits{})
		if err != nil {
			t.Errorf("the agent got %s: %v", msg.Data, err)
			return
		}
		got <- m
		b, _ := json.Marshal(ondemand.TriggerReply{Host: "node-3", Run: m.Run, Capture: m.ID, Processes: []int{77}, Ranks: []int{5}, Paths: []string{"/tmp/x"}})
		msg.Respond(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	nc.Flush()

	post := func(run, token, body string) (int, odwire.HTTPReply) {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+srv.HTTPAddr()+"/runs/"+run+"/trigger", strings.NewReader(body))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		r, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		var rep odwire.HTTPReply
		json.Unmarshal(b, &rep)
		return r.StatusCode, rep
	}
	index, _ := http.NewRequest("GET", "http://"+srv.HTTPAddr()+"/", nil)
	index.Header.Set("Authorization", "Bearer s3cret")
	if r, err := http.DefaultClient.Do(index); err != nil {
		t.Fatal(err)
	} else {
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		if !strings.Contains(string(b), "POST /runs/{id}/trigger") {
			t.Errorf("the index does not list the trigger route:\n%s", b)
		}
	}
	if code, _ := post("job7", "", ""); code != http.StatusUnauthorized {
		t.Errorf("without the token: %d, want 401", code)
	}
	if code, _ := post("job7", "wrong", ""); code != http.StatusUnauthorized {
		t.Errorf("with a wrong token: %d, want 401", code)
	}
	if len(got) != 0 {
		t.Fatal("a refused request reached the agents")
	}
	code, rep := post("job7", "s3cret", `{"steps": 2, "wait": 20, "agents": 1, "timeout_ms": 60000}`)
	if code != http.StatusOK || rep.Accepted != 1 || len(rep.Replies) != 1 || rep.Replies[0].Host != "node-3" || rep.Replies[0].Ranks[0] != 5 {
		t.Fatalf("accepted: %d %+v", code, rep)
	}
	m := <-got
	if m.Steps != 2 || m.Wait != 20 || m.ID != rep.Capture || !strings.HasPrefix(m.By, "serve ") {
		t.Errorf("the agent got %+v", m)
	}
	if code, rep := post("job7", "s3cret", `{"steps": 2, "duration_ms": 100}`); code != http.StatusBadRequest || rep.Error == "" {
		t.Errorf("steps and a duration: %d %+v", code, rep)
	}
	if code, rep := post("job7", "s3cret", `{"steps": 9999}`); code != http.StatusBadRequest || !strings.Contains(rep.Error, "at most") {
		t.Errorf("over the limits: %d %+v", code, rep)
	}
	if code, rep := post("job7", "s3cret", `{"stepz": 1}`); code != http.StatusBadRequest || !strings.Contains(rep.Error, "unknown field") {
		t.Errorf("an unknown field: %d %+v", code, rep)
	}
	if code, rep := post("nobody", "s3cret", `{"timeout_ms": 60000}`); code != http.StatusNotFound || !strings.Contains(rep.Error, "no agent") {
		t.Errorf("a run without agents: %d %+v", code, rep)
	}
	if len(got) != 0 {
		t.Errorf("%d more triggers reached the agent", len(got))
	}
}

// serve.auto_trigger names detectors of the loaded set, else serve does
// not start.
func TestAutoTriggerDetectorsChecked(t *testing.T) {
	cfg := testConfig(t)
	cfg.Serve.Flight = ""
	cfg.Serve.AutoTrigger.Enabled = true
	cfg.Serve.AutoTrigger.Detectors = []string{"gpu_clock_cap", "no_such_detector"}
	if _, err := Start(context.Background(), cfg, mustSet(t), t.Logf); err == nil || !strings.Contains(err.Error(), `"no_such_detector" is not a finding detector`) {
		t.Fatalf("an unknown detector: %v", err)
	}
	cfg.Serve.AutoTrigger.Detectors = []string{"gpu_clock_cap", "gpu_throttle"}
	srv, err := Start(context.Background(), cfg, mustSet(t), t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	srv.Shutdown()
}
