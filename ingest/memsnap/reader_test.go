package memsnap

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/ingest/jsonscan"
)

// raw is the independent decode the tests compare with.
type raw struct {
	Segments []struct {
		Device        int    `json:"device"`
		TotalSize     int64  `json:"total_size"`
		AllocatedSize int64  `json:"allocated_size"`
		ActiveSize    int64  `json:"active_size"`
		RequestedSize int64  `json:"requested_size"`
		SegmentType   string `json:"segment_type"`
		Blocks        []struct {
			Size          int64  `json:"size"`
			RequestedSize int64  `json:"requested_size"`
			State         string `json:"state"`
		} `json:"blocks"`
	} `json:"segments"`
	DeviceTraces [][]struct {
		Action string `json:"action"`
		Size   int64  `json:"size"`
	} `json:"device_traces"`
}

func decode(t *testing.T, path string) (*raw, []byte) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Skip(err)
	}
	if bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		zr, err := gzip.NewReader(bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		if b, err = io.ReadAll(zr); err != nil {
			t.Fatal(err)
		}
	}
	var r raw
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r, b
}

func sum(v []int64) (s int64) {
	for _, x := range v {
		s += x
	}
	return s
}

// TestCorpusSnapshots checks every corpus snapshot against encoding/json.
func TestCorpusSnapshots(t *testing.T) {
	files := corpus.Glob(t, "memsnap/*.json.gz")
	if len(files) == 0 {
		t.Fatal("no corpus snapshots in memsnap/")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			want, _ := decode(t, f)
			snap, err := ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var reserved, allocated, active, requested int64
			blocks := 0
			states := map[string]int{}
			for _, s := range want.Segments {
				reserved += s.TotalSize
				allocated += s.AllocatedSize
				active += s.ActiveSize
				requested += s.RequestedSize
				blocks += len(s.Blocks)
				for _, b := range s.Blocks {
					states[b.State]++
				}
			}
			if snap.Segments.Len() != len(want.Segments) || snap.Blocks.Len() != blocks {
				t.Errorf("segments %d blocks %d, want %d %d", snap.Segments.Len(), snap.Blocks.Len(), len(want.Segments), blocks)
			}
			if got := sum(snap.Segments.Total.V); got != reserved {
				t.Errorf("reserved %d, want %d", got, reserved)
			}
			if got := sum(snap.Segments.Allocated.V); got != allocated {
				t.Errorf("allocated %d, want %d", got, allocated)
			}
			if got := sum(snap.Segments.Active.V); got != active {
				t.Errorf("active %d, want %d", got, active)
			}
			if got := sum(snap.Segments.Requested.V); got != requested {
				t.Errorf("requested %d, want %d", got, requested)
			}
			gotStates := map[string]int{}
			for _, id := range snap.Blocks.State.V {
				gotStates[snap.Str.Get(id)]++
			}
			for k, v := range states {
				if gotStates[k] != v {
					t.Errorf("state %s: %d blocks, want %d", k, gotStates[k], v)
				}
			}
			events, actions := 0, map[string]int{}
			for _, d := range want.DeviceTraces {
				events += len(d)
				for _, e := range d {
					actions[e.Action]++
				}
			}
			if snap.Events.Len() != events || snap.Devices != len(want.DeviceTraces) {
				t.Errorf("events %d devices %d, want %d %d", snap.Events.Len(), snap.Devices, events, len(want.DeviceTraces))
			}
			gotActions := map[string]int{}
			for _, id := range snap.Events.Action.V {
				gotActions[snap.Str.Get(id)]++
			}
			for k, v := range actions {
				if gotActions[k] != v {
					t.Errorf("action %s: %d, want %d", k, gotActions[k], v)
				}
			}
			if snap.Settings == nil {
				t.Error("allocator_settings not read")
			}
		})
	}
}

// TestMagma27 pins the figures issue 6 names for this snapshot.
func TestMagma27(t *testing.T) {
	path := corpus.Path(t, "memsnap/magma27_memory_snapshot.json.gz")
	snap, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Segments.Len() != 216 || snap.Events.Len() != 5163 {
		t.Errorf("segments %d events %d, want 216 and 5163", snap.Segments.Len(), snap.Events.Len())
	}
	// sites keep the user's frame, unescaped
	found := false
	for _, id := range snap.Events.Frame.V {
		if s := snap.Str.Get(id); strings.Contains(s, `D:\Dev\assignment2-systems`) && strings.HasSuffix(s, " forward") {
			found = true
			break
		}
	}
	if !found {
		t.Error("no allocation site from the user's model.py")
	}
}

const small = `{"segments": [
 {"device": 0, "address": 1000, "total_size": 2097152, "allocated_size": 1024, "active_size": 1536, "requested_size": 1000,
  "stream": 0, "segment_type": "small", "segment_pool_id": [0, 0], "is_expandable": true,
  "frames": [{"filename": "??", "line": 0, "name": "torch::unwind::unwind()"}, {"filename": "/x/torch/nn/modules/module.py", "line": 1, "name": "_call_impl"}, {"filename": "train.py", "line": 42, "name": "step"}],
  "blocks": [
   {"address": 1000, "size": 1024, "requested_size": 1000, "state": "active_allocated", "frames": []},
   {"address": 2024, "size": 512, "requested_size": 512, "state": "active_pending_free"},
   {"address": 2536, "size": 2094616, "requested_size": 0, "state": "inactive"}]}],
 "device_traces": [[
  {"action": "segment_alloc", "addr": 1000, "size": 2097152, "stream": 0, "time_us": 5, "frames": []},
  {"action": "alloc", "addr": 1000, "size": 1024, "stream": 0, "time_us": 6},
  {"action": "oom", "device_free": 4096, "size": 1073741824, "stream": 0, "time_us": 7}], []],
 "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "expandable_segments": true}}`

func TestSmallSnapshot(t *testing.T) {
	snap, err := Read(strings.NewReader(small), "small.json")
	if err != nil {
		t.Fatal(err)
	}
	s := &snap.Segments
	if s.Len() != 1 || !s.Expandable[0] || snap.Str.Get(s.Pool.V[0]) != "[0,0]" || snap.Str.Get(s.SegmentType.V[0]) != "small" || s.Blocks.V[0] != 3 {
		t.Errorf("segment = %+v", s)
	}
	if got := snap.Str.Get(s.Frame.V[0]); got != "train.py:42 step" {
		t.Errorf("segment site %q", got)
	}
	b := &snap.Blocks
	if b.Len() != 3 || b.SegmentAddress.V[2] != 1000 || b.Size.V[2] != 2094616 || snap.Str.Get(b.State.V[1]) != "active_pending_free" {
		t.Errorf("blocks = %+v", b)
	}
	if b.Frame.Valid(0) || b.Frame.Valid(1) {
		t.Error("blocks without frames have a site")
	}
	e := &snap.Events
	if e.Len() != 3 || snap.Devices != 2 || e.TS.V[1] != 6000 || e.Seq.V[2] != 2 {
		t.Errorf("events = %+v devices %d", e, snap.Devices)
	}
	if e.Addr.Valid(2) || !e.DeviceFree.Valid(2) || e.DeviceFree.V[2] != 4096 || e.DeviceFree.Valid(0) {
		t.Errorf("oom row: addr valid %v, device_free %v", e.Addr.Valid(2), e.DeviceFree.V[2])
	}
	if snap.Settings["PYTORCH_CUDA_ALLOC_CONF"] != "expandable_segments:True" {
		t.Errorf("settings %v", snap.Settings)
	}
}

func TestSmallSnapshotAnyWindow(t *testing.T) {
	ref, err := Read(strings.NewReader(small), "small.json")
	if err != nil {
		t.Fatal(err)
	}
	// one byte per Read: every unit is cut and parsed again after refills
	got, err := Read(&oneByte{r: strings.NewReader(small)}, "small.json")
	if err != nil {
		t.Fatal(err)
	}
	if got.Segments.Len() != ref.Segments.Len() || got.Blocks.Len() != ref.Blocks.Len() || got.Events.Len() != ref.Events.Len() ||
		sum(got.Blocks.Size.V) != sum(ref.Blocks.Size.V) {
		t.Error("one-byte reads give other tables")
	}
}

type oneByte struct{ r io.Reader }

func (o *oneByte) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	return o.r.Read(p[:1])
}

func TestErrors(t *testing.T) {
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	w.Write([]byte(small))
	w.Close()
	zipped := gz.Bytes()
	cases := []struct {
		name, file string
		data       []byte
		want       []string
	}{
		{"empty", "s.json", nil, []string{"s.json", "empty file"}},
		{"truncated", "s.json", []byte(small[:len(small)/2]), []string{"s.json: byte", "cut short"}},
		{"truncated gzip", "s.json.gz", zipped[:len(zipped)-30], []string{"s.json.gz: compressed byte", "gzip"}},
		{"pickle", "s.pickle", []byte{0x80, 0x04, 0x95}, []string{"never deserialized", "_snapshot()"}},
		{"trace", "t.json", []byte(`{"traceEvents": []}`), []string{"profiler trace, not a memory snapshot", "trainscope analyze t.json"}},
		{"syntax", "s.json", []byte(`{"segments": [{"device" 0}]}`), []string{"s.json: byte 24", "expected ':'"}},
		{"garbage after", "s.json", []byte(`{} x`), []string{"s.json: byte 3", "after the end"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(c.data), c.file)
			var fe *jsonscan.FileError
			if !errors.As(err, &fe) || fe.Path != c.file {
				t.Fatalf("error %v (%T), want a FileError for %s", err, err, c.file)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q lacks %q", err, w)
				}
			}
		})
	}
}

func FuzzMemsnap(f *testing.F) {
	f.Add([]byte(small))
	f.Add([]byte(`{"segments": [], "device_traces": [[]]}`))
	// the corpus snapshot's head, when the corpus has it (a missing seed
	// must not skip the fuzz target)
	if seed := "memsnap/magma27_memory_snapshot.json.gz"; corpus.Has(seed) {
		if b, err := os.ReadFile(corpus.Path(f, seed)); err == nil {
			if zr, err := gzip.NewReader(bytes.NewReader(b)); err == nil {
				head := make([]byte, 64<<10)
				n, _ := io.ReadFull(zr, head)
				f.Add(head[:n])
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		snap, err := Read(bytes.NewReader(data), "fuzz.json")
		if err != nil {
			var fe *jsonscan.FileError
			if !errors.As(err, &fe) || fe.Path != "fuzz.json" {
				t.Fatalf("error %v (%T) is not a FileError", err, err)
			}
			return
		}
		if snap.Blocks.Len() < 0 || len(snap.Segments.Expandable) != snap.Segments.Len() {
			t.Fatal("inconsistent tables")
		}
		total := int32(0)
		for _, n := range snap.Segments.Blocks.V {
			total += n
		}
		if int(total) != snap.Blocks.Len() {
			t.Fatalf("segments list %d blocks, table has %d", total, snap.Blocks.Len())
		}
	})
}
