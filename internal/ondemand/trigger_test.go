package ondemand

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestTriggerSubject(t *testing.T) {
	if s := TriggerSubject("prod", "llama.7b run"); s != "trainscope-trigger.prod.llama_7b_run" {
		t.Fatal(s)
	}
	if s := TriggerSubjectAll("prod"); s != "trainscope-trigger.prod.*" {
		t.Fatal(s)
	}
	if strings.HasPrefix(TriggerSubject("c", "r"), "trainscope.") {
		t.Fatal("a trigger subject inside the stream's trainscope.> space")
	}
}

func TestTriggerRoundTrip(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	m := NewTrigger("job42", 0, 0, "alice@laptop", now)
	if m.Steps != DefaultTriggerSteps || m.Wait != DefaultTriggerWait || m.ID != "od1795780800000-job42" || m.Reason != "manual" {
		t.Fatalf("%+v", m)
	}
	b, err := EncodeTrigger(m, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeTrigger(b, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if string(must(json.Marshal(got))) != string(b) {
		t.Fatalf("round trip: %s vs %s", must(json.Marshal(got)), b)
	}
	r := got.Request("/tmp/traces")
	if r.Run != "job42" || r.Steps != 5 || r.Wait != 10 || r.ID != m.ID || r.OutputDir != "/tmp/traces" || r.By != "alice@laptop" {
		t.Fatalf("request %+v", r)
	}
	auto := TriggerMessage{V: 1, ID: "a1", Run: "r", DurationMS: 2000, StartAtMS: now.Add(30 * time.Second).UnixMilli(), By: "serve", Reason: "sm_clock_drop", SentMS: now.UnixMilli(), Toggles: Toggles{Stacks: true}}
	if err := auto.Check(Limits{}); err != nil {
		t.Fatal(err)
	}
	r = auto.Request("/tmp/t")
	if r.Duration != 2*time.Second || !r.StartAt.Equal(now.Add(30*time.Second)) || r.By != "serve (sm_clock_drop)" || !r.Stacks {
		t.Fatalf("request %+v", r)
	}
	// ReplyFor
	c := &Capture{ID: "a1", Targets: []Target{{PID: 5, Rank: 2, Paths: []string{"/tmp/x_5.json"}}}}
	if rep := ReplyFor("n1", "r", c, nil); rep.Capture != "a1" || rep.Ranks[0] != 2 || rep.Paths[0] != "/tmp/x_5.json" {
		t.Fatalf("%+v", rep)
	}
	if rep := ReplyFor("n1", "r", nil, ErrBusy); rep.Error == "" || rep.Capture != "" {
		t.Fatalf("%+v", rep)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

func TestTriggerRefusals(t *testing.T) {
	ok := `{"v":1,"id":"x1","run":"r","steps":5,"wait":10,"sent_ms":1}`
	if _, err := DecodeTrigger([]byte(ok), Limits{}); err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]string{
		"version":        `{"v":2,"id":"x1","run":"r","steps":5,"sent_ms":1}`,
		"unknown field":  `{"v":1,"id":"x1","run":"r","steps":5,"sent_ms":1,"rm":"-rf"}`,
		"trailing":       ok + `{}`,
		"trailing brace": ok + `}`,
		"trailing text":  ok + ` x`,
		"no run":         `{"v":1,"id":"x1","steps":5,"sent_ms":1}`,
		"bad id":         `{"v":1,"id":"../x","run":"r","steps":5,"sent_ms":1}`,
		"no length":      `{"v":1,"id":"x1","run":"r","sent_ms":1}`,
		"both":           `{"v":1,"id":"x1","run":"r","steps":5,"duration_ms":100,"sent_ms":1}`,
		"too many steps": `{"v":1,"id":"x1","run":"r","steps":51,"sent_ms":1}`,
		"too long":       `{"v":1,"id":"x1","run":"r","duration_ms":600000,"sent_ms":1}`,
		"wait":           `{"v":1,"id":"x1","run":"r","steps":5,"wait":100000,"sent_ms":1}`,
		"negative":       `{"v":1,"id":"x1","run":"r","steps":-5,"sent_ms":1}`,
		"start+steps":    `{"v":1,"id":"x1","run":"r","steps":5,"start_at_ms":5,"sent_ms":1}`,
		"bad pid":        `{"v":1,"id":"x1","run":"r","steps":5,"pids":[0],"sent_ms":1}`,
		"control in by":  `{"v":1,"id":"x1","run":"r","steps":5,"by":"a\nb","sent_ms":1}`,
		"not json":       `steps=5`,
		"huge":           `{"v":1,"id":"x1","run":"r","steps":5,"by":"` + strings.Repeat("a", MaxTriggerBytes) + `"}`,
	} {
		if _, err := DecodeTrigger([]byte(s), Limits{}); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := DecodeTrigger([]byte(`{"v":1,"id":"x1","run":"r","steps":60,"sent_ms":1}`), Limits{MaxSteps: 100}); err != nil {
		t.Fatalf("an agent's own limits: %v", err)
	}
}

// FuzzTrigger: a trigger arrives from the network. Whatever decodes must
// be within the limits and must make a request the daemon accepts.
func FuzzTrigger(f *testing.F) {
	f.Add([]byte(`{"v":1,"id":"x1","run":"r","steps":5,"wait":10,"sent_ms":1}`))
	f.Add([]byte(`{"v":1,"id":"a","run":"r","duration_ms":2000,"start_at_ms":99999999999999,"by":"serve","reason":"x","pids":[3],"shapes":true}`))
	f.Add([]byte(`{"v":1}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeTrigger(b, Limits{})
		if err != nil {
			return
		}
		if m.Steps > DefaultLimits.MaxSteps || m.DurationMS > DefaultLimits.MaxDuration.Milliseconds() || (m.Steps > 0) == (m.DurationMS > 0) {
			t.Fatalf("out of limits: %+v", m)
		}
		now := time.UnixMilli(m.SentMS)
		if m.StartAtMS != 0 {
			now = time.UnixMilli(m.StartAtMS)
		}
		if err := DefaultLimits.check(m.Request("/tmp/t"), now); err != nil {
			t.Fatalf("decoded %s but the daemon refuses it: %v", b, err)
		}
	})
}
