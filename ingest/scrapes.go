package ingest

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/ingest/dcgm"
	"github.com/trainscope/trainscope/stream"
)

// IsScrape says whether a path names a saved Prometheus scrape (*.prom),
// such as dcgm-exporter's.
func IsScrape(path string) bool {
	return strings.HasSuffix(strings.ToLower(path), ".prom")
}

// scrapeFile is a read scrape file and where its samples go.
type scrapeFile struct {
	path    string
	scrapes []dcgm.Scrape
	mtimeNS int64
}

// ReadScrapes reads a saved scrape file; a file with nothing Prometheus can
// read is an InputError naming the file and line.
func readScrapes(path string) (*scrapeFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &InputError{err}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, &InputError{err}
	}
	scrapes, err := dcgm.Read(f, path)
	if err != nil {
		return nil, &InputError{err}
	}
	return &scrapeFile{path: path, scrapes: scrapes, mtimeNS: st.ModTime().UnixNano()}, nil
}

// samples counts the file's samples.
func (s *scrapeFile) samples() int {
	n := 0
	for _, sc := range s.scrapes {
		n += len(sc.Samples)
	}
	return n
}

// stored are the labels the counters table keeps in columns of their own.
var stored = map[string]bool{"Hostname": true, "hostname": true, "gpu": true}

// labelsJSON is a sample's labels but those in drop (nil: the ones stored
// in columns of their own) as one JSON object with sorted keys, and
// whether it has any.
func labelsJSON(labels map[string]string, drop map[string]bool) (string, bool) {
	if drop == nil {
		drop = stored
	}
	rest := make(map[string]string, len(labels))
	for k, v := range labels {
		if !drop[k] {
			rest[k] = v
		}
	}
	if len(rest) == 0 {
		return "", false
	}
	b, err := json.Marshal(rest) // map keys come out sorted
	if err != nil {
		return "", false
	}
	return string(b), true
}

// appendSample adds a scrape's sample to t: its device from the gpu label,
// at its own timestamp or else at (and then it says true), with its labels
// but those in drop (nil: the ones with columns of their own) as JSON.
func appendSample(t *stream.CounterTable, x dcgm.Sample, at int64, drop map[string]bool) (untimed bool) {
	if g, err := strconv.ParseInt(x.Labels["gpu"], 10, 32); err == nil && g >= 0 {
		t.Device.Append(int32(g))
	} else {
		t.Device.AppendNull()
	}
	ts := x.TimestampMs * 1_000_000
	if x.TimestampMs == 0 {
		ts, untimed = at, true
	}
	t.TS.Append(ts)
	t.Metric.Append(t.Str.ID(x.Name))
	t.Value.Append(x.Value)
	if l, ok := labelsJSON(x.Labels, drop); ok {
		t.Labels.Append(t.Str.ID(l))
	} else {
		t.Labels.AppendNull()
	}
	return untimed
}

// batches turns the samples into counters rows, one batch per host (the
// Hostname label, else host, else "unknown"), device from the gpu label.
// A sample without a timestamp (dcgm-exporter writes none) is placed at
// the file's modification time, and the notes say so; NaN and infinite
// values are left out with a note.
func (s *scrapeFile) batches(runID, host string) ([]Batch, []string) {
	byHost := map[string]*stream.CounterTable{}
	var notes []string
	untimed, bad := 0, 0
	for _, sc := range s.scrapes {
		for _, x := range sc.Samples {
			if math.IsNaN(x.Value) || math.IsInf(x.Value, 0) {
				bad++
				continue
			}
			h := x.Labels["Hostname"]
			if h == "" {
				h = x.Labels["hostname"]
			}
			if h == "" {
				h = host
			}
			if h == "" {
				h = "unknown"
			}
			t := byHost[h]
			if t == nil {
				t = &stream.CounterTable{Str: stream.NewStrings()}
				byHost[h] = t
			}
			if appendSample(t, x, s.mtimeNS, nil) {
				untimed++
			}
		}
	}
	if untimed > 0 {
		notes = append(notes, fmt.Sprintf("%d sample(s) in %d scrape(s) carry no timestamp: placed at the file's modification time", untimed, len(s.scrapes)))
	}
	if bad > 0 {
		notes = append(notes, fmt.Sprintf("%d NaN or infinite sample(s) left out", bad))
	}
	hosts := make([]string, 0, len(byHost))
	for h := range byHost {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var out []Batch
	for _, h := range hosts {
		out = append(out, Batch{"counters", byHost[h].Record(runID, h, 0, false)})
	}
	return out, notes
}
