// Command bigtrace makes one large single-rank trace from a real one by
// repeating its events end to end: each copy is shifted in time by the
// trace's span, and its step numbers, correlation ids, external ids and
// flow ids are moved past the previous copy's, so the result reads as one
// long profile of the same workload (what a user gets from profiling many
// steps of one rank). It measures the readers' memory on big inputs.
//
//	go run ./bench/bigtrace -in TRACE.json.gz -copies 28 -out big.json
package main

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
)

func main() {
	in := flag.String("in", "", "input trace (.json or .json.gz)")
	copies := flag.Int("copies", 10, "how many times to repeat its events")
	out := flag.String("out", "", "output file (.json)")
	flag.Parse()
	if *in == "" || *out == "" || *copies < 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*in, *out, *copies); err != nil {
		fmt.Fprintln(os.Stderr, "bigtrace:", err)
		os.Exit(1)
	}
}

var stepName = regexp.MustCompile(`^ProfilerStep#(\d+)$`)

func run(in, out string, copies int) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(in, ".gz") {
		zr, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		r = zr
	}
	var doc map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&doc); err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var events []map[string]any
	dec := json.NewDecoder(strings.NewReader(string(doc["traceEvents"])))
	dec.UseNumber()
	if err := dec.Decode(&events); err != nil {
		return fmt.Errorf("%s: traceEvents: %w", in, err)
	}
	delete(doc, "traceEvents")

	// how far each copy moves: past the last event, the largest ids and steps
	lo, hi := int64(1<<62), int64(0)
	var maxCorr, maxExt, maxFlow, maxStep int64
	for _, e := range events {
		if e["ph"] == "M" {
			continue
		}
		ts, dur := num(e["ts"]), num(e["dur"])
		if _, ok := e["ts"]; ok {
			lo, hi = min(lo, ts), max(hi, ts+dur)
		}
		maxFlow = max(maxFlow, num(e["id"]))
		if m := stepName.FindStringSubmatch(str(e["name"])); m != nil {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			maxStep = max(maxStep, n)
		}
		if a, ok := e["args"].(map[string]any); ok {
			maxCorr = max(maxCorr, num(a["correlation"]))
			maxExt = max(maxExt, num(a["External id"]))
		}
	}
	span := hi - lo + 1000

	w, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	bw.WriteString("{\n")
	for k, v := range doc {
		fmt.Fprintf(bw, "%q: %s,\n", k, v)
	}
	bw.WriteString(`"traceEvents": [`)
	enc := json.NewEncoder(bw)
	first := true
	for c := range int64(copies) {
		for _, e := range events {
			if e["ph"] == "M" && c > 0 {
				continue
			}
			ev := e
			if c > 0 {
				ev = shift(e, c, span, maxCorr+1, maxExt+1, maxFlow+1, maxStep)
			}
			if !first {
				bw.WriteString(",")
			}
			first = false
			if err := enc.Encode(ev); err != nil {
				return err
			}
		}
	}
	bw.WriteString("]}\n")
	if err := bw.Flush(); err != nil {
		return err
	}
	return w.Close()
}

// shift is copy c of event e.
func shift(e map[string]any, c, span, corr, ext, flow, steps int64) map[string]any {
	out := make(map[string]any, len(e))
	for k, v := range e {
		out[k] = v
	}
	if _, ok := e["ts"]; ok {
		out["ts"] = num(e["ts"]) + c*span
	}
	if _, ok := e["id"]; ok {
		out["id"] = num(e["id"]) + c*flow
	}
	if m := stepName.FindStringSubmatch(str(e["name"])); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		out["name"] = fmt.Sprintf("ProfilerStep#%d", n+c*steps)
	}
	if a, ok := e["args"].(map[string]any); ok {
		b := make(map[string]any, len(a))
		for k, v := range a {
			b[k] = v
		}
		if _, ok := a["correlation"]; ok {
			b["correlation"] = num(a["correlation"]) + c*corr
		}
		if _, ok := a["External id"]; ok {
			b["External id"] = num(a["External id"]) + c*ext
		}
		out["args"] = b
	}
	return out
}

func num(v any) int64 {
	switch x := v.(type) {
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return n
		}
		f, _ := x.Float64()
		return int64(f)
	case int64:
		return x
	}
	return 0
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
