package kineto

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/trainscope/trainscope/ingest/jsonscan"
)

// Times that would overflow int64 once the time base is added, or in a
// detector's ts + dur, are refused at the reader with the file and the
// byte offset of the event (they used to wrap negative, or fail in a
// detector that named no file).
func TestReadRefusesTimesOutOfRange(t *testing.T) {
	ev := func(ts, dur string) string {
		return `{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":` + ts + `,"dur":` + dur + `}`
	}
	ok := ev("10", "5")
	tests := []struct {
		name, doc string
		at        string // the event the offset must point at
		msg       string
	}{
		{"ts past 2116", `{"traceEvents":[` + ok + `,` + ev("4700000000000000", "1") + `]}`, ev("4700000000000000", "1"), "outside the times"},
		{"ts far negative", `{"traceEvents":[` + ev("-2000000000000000", "1") + `]}`, ev("-2000000000000000", "1"), "outside the times"},
		{"dur of centuries", `{"traceEvents":[` + ok + `,` + ev("1", "4000000000000000") + `]}`, ev("1", "4000000000000000"), "longer than trainscope stores"},
		{"base pushes an end past 2116", `{"traceEvents":[` + ok + `,` + ev("4000000000000000", "1") + `],"baseTimeNanoseconds":1700000000000000000}`,
			ev("4000000000000000", "1"), "baseTimeNanoseconds"},
		{"base beyond int64 sense", `{"traceEvents":[` + ok + `],"baseTimeNanoseconds":9000000000000000000}`, `9000000000000000000`, "baseTimeNanoseconds"},
		{"negative base", `{"traceEvents":[` + ok + `],"baseTimeNanoseconds":-5}`, `-5`, "baseTimeNanoseconds"},
	}
	for _, tc := range tests {
		_, err := Read(strings.NewReader(tc.doc), "t.json", Options{Rank: -1})
		var fe *jsonscan.FileError
		if !errors.As(err, &fe) {
			t.Errorf("%s: %v, want a FileError", tc.name, err)
			continue
		}
		want := int64(strings.Index(tc.doc, tc.at))
		if fe.Path != "t.json" || fe.Offset != want || !strings.Contains(fe.Msg, tc.msg) {
			t.Errorf("%s: %v; want t.json at byte %d mentioning %q", tc.name, err, want, tc.msg)
		}
	}
	// the largest times that still fit are read as they are
	tr := mustRead(t, "t.json", `{"traceEvents":[`+ev("1", "2")+`],"baseTimeNanoseconds":4000000000000000000}`)
	if got := tr.Slices.TS.V[0]; got != 4000000000000001000 {
		t.Errorf("ts %d", got)
	}
}

// Names that are not UTF-8 (profilers copy C++ names byte for byte) are
// repaired with U+FFFD, and a note says how many and where the first is.
func TestReadRepairsInvalidUTF8(t *testing.T) {
	bad := "void gemm<\xff\xfe>(float*)"
	doc := `{"traceEvents":[` +
		`{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":0,"tid":7,"ts":1,"dur":5},` +
		`{"ph":"X","cat":"kernel","name":"` + bad + `","pid":0,"tid":7,"ts":2,"dur":3},` +
		`{"ph":"X","cat":"kernel","name":"` + bad + `","pid":0,"tid":7,"ts":6,"dur":3},` +
		`{"ph":"X","cat":"kern` + "\xc3" + `","name":"ok","pid":0,"tid":7,"ts":9,"dur":1}]}`
	tr := mustRead(t, "t.json", doc)
	for i := range tr.Slices.Len() {
		if n := nameOf(tr, i); !utf8.ValidString(n) {
			t.Errorf("row %d: name %q is not UTF-8", i, n)
		}
	}
	if got := nameOf(tr, 1); got != "void gemm<\uFFFD>(float*)" {
		t.Errorf("repaired name %q", got)
	}
	firstEnd := strings.Index(doc, bad) + len(bad) + len(`","pid":0,"tid":7,"ts":2,"dur":3}`)
	if len(tr.Notes) != 1 || !strings.Contains(tr.Notes[0], "2 distinct name(s)") ||
		!strings.Contains(tr.Notes[0], "ending at byte "+strconv.Itoa(firstEnd)) {
		t.Errorf("notes %q; want 2 names, the first ending at byte %d", tr.Notes, firstEnd)
	}
}

// A trace's host is its host_name metadata (as Meta's Kineto writes it),
// never a file name: tensorboard_trace_handler's "worker5_step_12.<ms>"
// names a worker, and was once read as host "worker5_step".
func TestHostFromMetadataOnly(t *testing.T) {
	tr := mustRead(t, "worker5_step_12.1694128201556.pt.trace.json", `{"traceEvents":[]}`)
	if tr.Host != "" {
		t.Errorf("host %q from a file name", tr.Host)
	}
	tr = mustRead(t, "x.json", `{"host_name": "twshared39868.02.pnb3", "traceEvents":[]}`)
	if tr.Host != "twshared39868.02.pnb3" {
		t.Errorf("host %q, want the host_name metadata", tr.Host)
	}
}

// An all_to_all that NCCL runs as SendRecv kernels is an all-to-all: the
// collective comes from the operator that issued the kernel (its External
// id), and a SendRecv with no such operator stays point-to-point.
func TestCollectiveFromIssuingOperator(t *testing.T) {
	doc := `{"traceEvents":[
 {"ph":"X","cat":"cpu_op","name":"record_param_comms","pid":1,"tid":1,"ts":10,"dur":50,"args":{"External id":7,"Collective name":"all_to_allv","dtype":"Float","In msg nelems":1024}},
 {"ph":"X","cat":"cpu_op","name":"c10d::allgather_","pid":1,"tid":1,"ts":100,"dur":50,"args":{"External id":8}},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)","pid":0,"tid":20,"ts":20,"dur":30,"args":{"External id":7,"stream":20,"device":0}},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_Generic(ncclDevComm*, unsigned long, ncclWork*)","pid":0,"tid":20,"ts":110,"dur":30,"args":{"External id":8,"stream":20,"device":0}},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)","pid":0,"tid":20,"ts":200,"dur":30,"args":{"External id":9,"stream":20,"device":0}}]}`
	tr := mustRead(t, "a2a.json", doc)
	want := map[int64]string{20_000: "alltoall", 110_000: "allgather", 200_000: "sendrecv"}
	for i := range tr.Slices.Len() {
		if kindOf(tr, i) != "comm" {
			continue
		}
		got := dictAt(tr, &tr.Slices.CollName, i)
		if w := want[tr.Slices.TS.V[i]]; got != w {
			t.Errorf("kernel at %d ns: collective %q, want %q", tr.Slices.TS.V[i], got, w)
		}
		// the message size comes from the issuing operator too
		n, ok := sparseAt(&tr.Slices.CollInElems, i)
		dt := dictAt(tr, &tr.Slices.CollDtype, i)
		if tr.Slices.TS.V[i] == 20_000 && (!ok || n != 1024 || dt != "Float") {
			t.Errorf("all_to_all kernel: %v %d elements of %q, want 1024 of Float", ok, n, dt)
		}
		if tr.Slices.TS.V[i] != 20_000 && ok {
			t.Errorf("kernel at %d ns has %d elements from nowhere", tr.Slices.TS.V[i], n)
		}
	}
}

// In older traces a kernel's External id is its correlation id, and no
// operator has it: the collective comes from the c10d:: operator around
// the runtime call that launched the kernel, found by correlation id
// among many other launches, in one pass and in two.
func TestCollectiveFromLaunchStack(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"traceEvents":[
 {"ph":"X","cat":"cpu_op","name":"c10d::allreduce_","pid":1,"tid":1,"ts":100,"dur":100,"args":{"External id":3}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":110,"dur":5,"args":{"correlation":55,"External id":3}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":300,"dur":5,"args":{"correlation":56}},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)","pid":0,"tid":20,"ts":120,"dur":30,"args":{"correlation":55,"External id":55,"stream":20,"device":0}},
 {"ph":"X","cat":"kernel","name":"ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)","pid":0,"tid":20,"ts":310,"dur":30,"args":{"correlation":56,"External id":56,"stream":20,"device":0}}`)
	for i := range 50 { // launches of compute kernels, no collective
		fmt.Fprintf(&b, `,
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":%d,"dur":2,"args":{"correlation":%d}},
 {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":%d,"dur":2,"args":{"correlation":%d,"stream":7,"device":0}}`, 1000+10*i, 100+i, 1003+10*i, 100+i)
	}
	b.WriteString("]}")
	path := filepath.Join(t.TempDir(), "old.json")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := ReadFile(path, Options{Rank: -1})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]string{120_000: "allreduce", 310_000: "sendrecv"}
	for i := range tr.Slices.Len() {
		if kindOf(tr, i) != "comm" {
			continue
		}
		if got, w := dictAt(tr, &tr.Slices.CollName, i), want[tr.Slices.TS.V[i]]; got != w {
			t.Errorf("kernel at %d ns: collective %q, want %q", tr.Slices.TS.V[i], got, w)
		}
		delete(want, tr.Slices.TS.V[i])
	}
	if len(want) > 0 {
		t.Errorf("kernels not read: %v", want)
	}
	sameInTwoPasses(t, path, tr, 0)
}
