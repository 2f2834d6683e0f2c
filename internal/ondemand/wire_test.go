package ondemand

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// TestLayout pins the bytes against the C structs: Metadata {size_t size;
// char type[32]}, LibkinetoContext {int32 gpu; int32 pid; int64 jobid},
// LibkinetoRequest {int type; int n; int64 jobid; int32 pids[]}.
func TestLayout(t *testing.T) {
	b, err := Encode(TypeRequest, EncodePoll(Poll{ConfigType: ConfigActivities, JobID: 7, PIDs: []int32{4242, 1}}))
	if err != nil {
		t.Fatal(err)
	}
	want := []byte{
		24, 0, 0, 0, 0, 0, 0, 0, // size_t size = 16 + 2*4
		'r', 'e', 'q', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		2, 0, 0, 0, // type = ACTIVITIES
		2, 0, 0, 0, // n
		7, 0, 0, 0, 0, 0, 0, 0, // jobid
		0x92, 0x10, 0, 0, // 4242
		1, 0, 0, 0,
	}
	if !bytes.Equal(b, want) {
		t.Fatalf("poll datagram\n got %v\nwant %v", b, want)
	}
	ctx := EncodeContext(Context{GPU: 3, PID: 99, JobID: -1})
	if !bytes.Equal(ctx, []byte{3, 0, 0, 0, 99, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
		t.Fatalf("context payload %v", ctx)
	}
	m, err := Decode(b)
	if err != nil || m.Type != TypeRequest {
		t.Fatal(m, err)
	}
	q, err := DecodePoll(m.Payload)
	if err != nil || q.JobID != 7 || len(q.PIDs) != 2 || q.PIDs[0] != 4242 || q.ConfigType != ConfigActivities {
		t.Fatal(q, err)
	}
	c, err := DecodeContext(ctx)
	if err != nil || c != (Context{GPU: 3, PID: 99, JobID: -1}) {
		t.Fatal(c, err)
	}
	r := configReply("A=1\n")
	if binary.LittleEndian.Uint64(r) != 4 || string(r[8:11]) != "req" || string(r[headerSize:]) != "A=1\n" {
		t.Fatalf("config reply %v", r)
	}
	if len(configReply("")) != headerSize {
		t.Fatal("an empty config is a bare header")
	}
	if _, err := Encode("", nil); err == nil {
		t.Fatal("empty type encoded")
	}
	if _, err := Encode(string(make([]byte, 32)), nil); err == nil {
		t.Fatal("32-byte type encoded: no room for its NUL")
	}
	if _, err := DecodeReply(make([]byte, headerSize+MaxConfigBytes+1)); err == nil {
		t.Fatal("oversized reply decoded")
	}
}

// FuzzDatagram feeds the daemon what a local process may send: it must
// not panic, must answer only a well-formed registration or poll, and
// what Decode accepts must encode back to the same bytes (but for what
// follows the type name's NUL, which the C side leaves zero and nobody
// reads).
func FuzzDatagram(f *testing.F) {
	seed := func(typ string, p []byte) {
		b, _ := Encode(typ, p)
		f.Add(b)
	}
	seed(TypeRequest, EncodePoll(Poll{ConfigType: ConfigActivities, PIDs: []int32{1000, 1}}))
	seed(TypeRequest, EncodePoll(Poll{ConfigType: 3, JobID: 5, PIDs: []int32{1001}}))
	seed(TypeContext, EncodeContext(Context{GPU: 0, PID: 1000}))
	seed("ctxt", []byte{1, 2, 3})
	f.Add([]byte{})
	f.Add(make([]byte, 40))
	h := &fakeHost{uid: selfUID()}
	clk := newClock()
	d := New(Config{Name: "fuzz", Host: "h", DefaultRun: "r", Now: clk.Now, Inspect: h.inspect})
	if _, err := d.Trigger(Request{Run: "r", Steps: 1, OutputDir: "/tmp/x"}); err == nil {
		f.Fatal("trigger with no process")
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Decode(b)
		if err == nil {
			again, err := Encode(m.Type, m.Payload)
			want := append([]byte{}, b...)
			clear(want[8+len(m.Type) : headerSize])
			if err != nil || !bytes.Equal(again, want) {
				t.Fatalf("Decode/Encode round trip: %v", err)
			}
		}
		reply := d.Handle(b, Peer{})
		if reply == nil {
			return
		}
		if err != nil {
			t.Fatalf("answered an undecodable datagram: %v", err)
		}
		r, err := DecodeReply(reply)
		if err != nil || r.Type != m.Type {
			t.Fatalf("reply %v: %v", reply, err)
		}
		// a triggered process gets its config on the next poll
		if m.Type == TypeRequest && len(d.Processes()) > 0 {
			d.Trigger(Request{Run: "r", Steps: 1, OutputDir: "/tmp/x"})
		}
	})
}
