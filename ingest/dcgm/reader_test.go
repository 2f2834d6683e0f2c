package dcgm

import (
	"bufio"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/trainscope/trainscope/bench/corpus"
)

// sampleLines counts a file's sample lines independently of the parser.
func sampleLines(t *testing.T, path string) (n int, hosts map[string]bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	hosts = map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 1<<20)
	for sc.Scan() {
		l := strings.TrimSpace(sc.Text())
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		n++
		if i := strings.Index(l, `Hostname="`); i >= 0 {
			rest := l[i+len(`Hostname="`):]
			hosts[rest[:strings.IndexByte(rest, '"')]] = true
		}
	}
	return n, hosts
}

// Both corpus scrapes parse with every sample and its labels; the kops
// file is two scrapes saved one after the other.
func TestCorpusScrapes(t *testing.T) {
	for _, c := range []struct {
		file    string
		scrapes int
	}{
		{"scrape_ericsson-ccd__accelerator_metrics.prom", 1},
		{"scrape_kops__tests__TestObservability_AcceleratorMetrics_ViaDCGM__output.prom", 2},
	} {
		path := corpus.Path(t, "dcgm/"+c.file)
		want, hosts := sampleLines(t, path)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		scrapes, err := Read(f, c.file)
		f.Close()
		if err != nil {
			t.Fatal(err)
		}
		got := 0
		for _, s := range scrapes {
			for _, x := range s.Samples {
				got++
				for _, l := range []string{"gpu", "UUID", "Hostname", "modelName"} {
					if x.Labels[l] == "" {
						t.Errorf("%s: %s lacks label %s: %v", c.file, x.Name, l, x.Labels)
					}
				}
				if !hosts[x.Labels["Hostname"]] {
					t.Errorf("%s: host %q is not in the file", c.file, x.Labels["Hostname"])
				}
			}
		}
		if len(scrapes) != c.scrapes || got != want {
			t.Errorf("%s: %d scrapes, %d samples; want %d, %d", c.file, len(scrapes), got, c.scrapes, want)
		}
	}
}

// A scrape's values, names and labels as written; a second scrape of the
// same series starts a new scrape at its line.
func TestReadValues(t *testing.T) {
	in := `# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).
# TYPE DCGM_FI_DEV_SM_CLOCK gauge
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="n1"} 1410
DCGM_FI_DEV_SM_CLOCK{gpu="1",Hostname="n1"} 1980 1700000000123
DCGM_FI_DEV_XID_ERRORS{gpu="1",Hostname="n1",err_msg="Graphics Engine Exception"} 13
DCGM_FI_DEV_SM_CLOCK{gpu="0",Hostname="n1"} 990
`
	scrapes, err := Read(strings.NewReader(in), "x.prom")
	if err != nil {
		t.Fatal(err)
	}
	if len(scrapes) != 2 || scrapes[1].Line != 6 {
		t.Fatalf("scrapes %+v, want two, the second from line 6", scrapes)
	}
	first := scrapes[0].Samples
	if len(first) != 3 || first[0].Value != 1410 || first[0].Type != "gauge" || first[1].TimestampMs != 1700000000123 ||
		first[2].Name != "DCGM_FI_DEV_XID_ERRORS" || first[2].Labels["err_msg"] != "Graphics Engine Exception" || first[2].Value != 13 {
		t.Errorf("first scrape: %+v", first)
	}
	if s := scrapes[1].Samples; len(s) != 1 || s[0].Value != 990 || s[0].Labels["gpu"] != "0" {
		t.Errorf("second scrape: %+v", s)
	}
}

// Bad input names the file and the file's line, also in a later scrape.
func TestReadErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"DCGM_FI_DEV_SM_CLOCK{gpu=\"0\" 1410\n", `x.prom: text format parsing error in line 1`},
		{"a{gpu=\"0\"} 1\nb 2\na{gpu=\"0\"} 3\nc{gpu=\"0\"} notanumber\n", `x.prom: text format parsing error in line 4`},
		{"", "x.prom: no samples"},
		{`{"traceEvents": []}`, "x.prom: text format parsing error in line 1"},
	} {
		_, err := Read(strings.NewReader(c.in), "x.prom")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzRead(f *testing.F) {
	// the smaller corpus scrape (5 KB): the mutator works on whole inputs
	for _, name := range []string{"scrape_ericsson-ccd__accelerator_metrics.prom"} {
		rel := "dcgm/" + name
		if !corpus.Has(rel) {
			continue // a missing seed must not skip the fuzz target
		}
		if b, err := os.ReadFile(corpus.Path(f, rel)); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("a{b=\"c\"} 1 2\n# TYPE a gauge\na 3\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		var scrapes []Scrape
		var err error
		done := make(chan struct{})
		go func() { scrapes, err = Read(strings.NewReader(string(b)), "f.prom"); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Read hangs on %q", b)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.prom: ") {
				t.Fatalf("error without the file name: %v", err)
			}
			return
		}
		for _, s := range scrapes {
			if s.Line < 1 || len(s.Samples) == 0 {
				t.Fatalf("scrape %+v", s)
			}
			for _, x := range s.Samples {
				if x.Name == "" || x.Labels == nil {
					t.Fatalf("sample %+v", x)
				}
			}
		}
	})
}

func BenchmarkReadCorpus(b *testing.B) {
	raw, err := os.ReadFile(corpus.Path(b, "dcgm/scrape_kops__tests__TestObservability_AcceleratorMetrics_ViaDCGM__output.prom"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if _, err := Read(strings.NewReader(string(raw)), "k.prom"); err != nil {
			b.Fatal(err)
		}
	}
}
