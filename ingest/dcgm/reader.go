package dcgm

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// MaxBytes bounds what Read accepts: a scrape of a 8-GPU node is ~100 KB;
// a file of thousands of them is still far below.
const MaxBytes = 256 << 20

// Sample is one value of one series.
type Sample struct {
	Name   string
	Type   string // gauge, counter, untyped ...
	Labels map[string]string
	Value  float64
	// TimestampMs is the sample's own timestamp (ms since the epoch), 0
	// when the exposition gives none.
	TimestampMs int64
}

// Scrape is one exposition: the samples of one scrape, in file order of
// their families.
type Scrape struct {
	Line    int // the file line it starts at
	Samples []Sample
}

// Read parses every scrape in r; name is the file's name for errors.
func Read(r io.Reader, name string) ([]Scrape, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(raw) > MaxBytes {
		return nil, fmt.Errorf("%s: larger than %d MiB; split it", name, MaxBytes>>20)
	}
	var out []Scrape
	for _, c := range split(raw) {
		s, err := parse(c.text, name, c.line)
		if err != nil {
			return nil, err
		}
		if len(s.Samples) > 0 {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no samples: not a Prometheus text exposition (a dcgm-exporter scrape)", name)
	}
	return out, nil
}

type chunk struct {
	text []byte
	line int // 1-based line of its first byte
}

// split cuts a file into scrapes: a family whose HELP or TYPE comes again,
// or a series (name and labels) that comes again, starts the next one.
func split(raw []byte) []chunk {
	var out []chunk
	declared := map[string]bool{}
	series := map[string]bool{}
	start, startLine, line := 0, 1, 0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 0, 64<<10), MaxBytes)
	off := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		next := off + len(text) + 1
		key, isDecl := "", false
		t := strings.TrimSpace(text)
		switch {
		case strings.HasPrefix(t, "# HELP ") || strings.HasPrefix(t, "# TYPE "):
			f := strings.Fields(t)
			if len(f) >= 3 {
				key, isDecl = t[:6]+f[2], true
			}
		case t != "" && !strings.HasPrefix(t, "#"):
			key = seriesPart(t) // the series: everything before the value
		}
		if key != "" {
			seen := declared
			if !isDecl {
				seen = series
			}
			if seen[key] && off > start {
				out = append(out, chunk{raw[start:off], startLine})
				start, startLine = off, line
				declared, series = map[string]bool{}, map[string]bool{}
				seen = declared
				if !isDecl {
					seen = series
				}
			}
			seen[key] = true
		}
		off = min(next, len(raw))
	}
	if start < len(raw) {
		out = append(out, chunk{raw[start:], startLine})
	}
	return out
}

// seriesPart is a sample line without its value and timestamp.
func seriesPart(t string) string {
	if i := strings.LastIndexByte(t, '}'); i >= 0 {
		return t[:i+1]
	}
	if f := strings.Fields(t); len(f) > 0 {
		return f[0]
	}
	return t
}

var errLine = regexp.MustCompile(`line (\d+)`)

func parse(text []byte, name string, first int) (Scrape, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(text))
	if err != nil {
		msg := err.Error()
		// the parser counts from the chunk's start: give the file's line
		if m := errLine.FindStringSubmatchIndex(msg); m != nil {
			n, _ := strconv.Atoi(msg[m[2]:m[3]])
			msg = msg[:m[2]] + strconv.Itoa(n+first-1) + msg[m[3]:]
		}
		return Scrape{}, fmt.Errorf("%s: %s", name, msg)
	}
	s := Scrape{Line: first}
	names := make([]string, 0, len(fams))
	for n := range fams {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := fams[n]
		typ := strings.ToLower(f.GetType().String())
		for _, m := range f.GetMetric() {
			v, ok := value(m)
			if !ok {
				continue
			}
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			s.Samples = append(s.Samples, Sample{Name: n, Type: typ, Labels: labels, Value: v, TimestampMs: m.GetTimestampMs()})
		}
	}
	return s, nil
}

// value is a metric's one number: gauges, counters and untyped values (DCGM
// writes only those); a summary or histogram gives its sum.
func value(m *dto.Metric) (float64, bool) {
	switch {
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue(), true
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue(), true
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue(), true
	case m.GetSummary() != nil:
		return m.GetSummary().GetSampleSum(), true
	case m.GetHistogram() != nil:
		return m.GetHistogram().GetSampleSum(), true
	}
	return 0, false
}
