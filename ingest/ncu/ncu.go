package ncu

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// Metric is one measured value of one profiled kernel launch, or one of
// ncu's rule hints for it (Name "rule:<rule>", Text the hint).
type Metric struct {
	Launch      int64  // ncu's ID of the launch in the export
	Kernel      string // the kernel's (demangled) name
	Device      int32  // -1 when the export does not say
	CC          string // compute capability, "" when not said
	Block, Grid [3]int32
	Stream      int64 // -1 when not said
	Section     string
	Name        string
	Unit        string   // normalised: byte, ns, hz, byte/s, %, cycle ...
	Value       *float64 // nil for a text value or a rule
	Text        string   // a value that is not a number, or a rule's type and hint
}

// Export is one read ncu CSV export.
type Export struct {
	Path    string
	Layout  string // "details" (--page details) or "raw" (--page raw)
	Metrics []Metric
	Kernels int      // distinct launches
	Notes   []string // what was skipped or is missing, for the user
}

// fixed are the columns that describe a launch rather than measure it.
var fixed = map[string]bool{
	"ID": true, "Process ID": true, "Process Name": true, "Host Name": true, "Kernel Name": true, "Kernel Time": true,
	"Context": true, "Stream": true, "Block Size": true, "Grid Size": true, "Device": true, "CC": true,
	"Function Name": true, "Demangled Name": true, "Mangled Name": true,
}

// ReadFile reads an ncu CSV export.
func ReadFile(path string) (*Export, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

// Read reads an ncu CSV export from r; path names it in errors and notes.
// Details exports have one row per metric (rows shorter than the header
// where the rule columns are empty); raw exports one row per launch, with
// a units row under the header. Values may carry thousands separators;
// "n/a" (not collected) is left out. An export that is not ncu's, or lacks
// the columns its layout needs, is an error naming what is missing; rows
// that cannot be read are left out and counted in a note.
func Read(r io.Reader, path string) (*Export, error) {
	cf := newCaptureFilter(r)
	cr := csv.NewReader(cf)
	cr.FieldsPerRecord = -1
	cr.LazyQuotes = true
	cr.ReuseRecord = false
	header, err := cr.Read()
	if errors.Is(err, io.EOF) && cf.firstOther != "" {
		// no header anywhere: judge the first line as one, for the error
		header, err = csv.NewReader(strings.NewReader(cf.firstOther)).Read()
		cf.skipped.before = 0
	}
	if err != nil {
		if errors.Is(err, io.EOF) && cf.skipped.log > 0 {
			why := ""
			if w := cf.skipped.firstWarning; w != "" {
				why = "; it says: " + w
			}
			return nil, fmt.Errorf("%s: %d of ncu's log lines and no CSV table (did ncu profile any kernel?)%s", path, cf.skipped.log, why)
		}
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty file, not an Nsight Compute CSV export", path)
		}
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(header) > 0 {
		header[0] = strings.TrimPrefix(header[0], "\ufeff")
	}
	col := map[string]int{}
	for i, h := range header {
		if _, ok := col[h]; !ok {
			col[h] = i
		}
	}
	if _, ok := col["Kernel Name"]; !ok {
		return nil, fmt.Errorf("%s: not an Nsight Compute CSV export: no \"Kernel Name\" column in the header (ncu --csv --page details or --page raw writes one)", path)
	}
	if _, ok := col["ID"]; !ok {
		return nil, fmt.Errorf("%s: no \"ID\" column in the header: which launch a row measures cannot be told", path)
	}
	e := &Export{Path: path}
	defer func() { e.Notes = append(cf.skipped.notes(), e.Notes...) }()
	if _, ok := col["Metric Name"]; ok {
		e.Layout = "details"
		var missing []string
		for _, c := range []string{"Metric Value", "Section Name", "Metric Unit"} {
			if _, ok := col[c]; !ok {
				missing = append(missing, c)
			}
		}
		if _, ok := col["Metric Value"]; !ok {
			return nil, fmt.Errorf("%s: a details export without a \"Metric Value\" column (an unknown ncu version?); the header has %s", path, strings.Join(header, ", "))
		}
		if len(missing) > 0 {
			e.Notes = append(e.Notes, "no "+strings.Join(missing, ", ")+" column(s): an unknown ncu version; metrics read without them")
		}
		err = e.readDetails(cr, col)
	} else {
		e.Layout = "raw"
		err = e.readRaw(cr, header, col)
	}
	if err != nil {
		return nil, err
	}
	launches := map[int64]bool{}
	for _, m := range e.Metrics {
		launches[m.Launch] = true
	}
	e.Kernels = len(launches)
	if e.Kernels == 0 {
		return nil, fmt.Errorf("%s: an Nsight Compute %s export with no kernel launch in it", path, e.Layout)
	}
	e.noteMissingSections()
	return e, nil
}

// launchOf reads the columns that describe a launch.
func launchOf(row []string, col map[string]int) (Metric, error) {
	get := func(name string) string {
		if i, ok := col[name]; ok && i < len(row) {
			return strings.TrimSpace(row[i])
		}
		return ""
	}
	id, err := strconv.ParseInt(get("ID"), 10, 64)
	if err != nil {
		return Metric{}, fmt.Errorf("ID %q is not a number", get("ID"))
	}
	m := Metric{Launch: id, Kernel: get("Kernel Name"), Device: -1, Stream: -1, CC: get("CC")}
	if m.Kernel == "" {
		return Metric{}, errors.New("no kernel name")
	}
	if d, err := strconv.ParseInt(get("Device"), 10, 32); err == nil {
		m.Device = int32(d)
	}
	if s, err := strconv.ParseInt(get("Stream"), 10, 64); err == nil {
		m.Stream = s
	}
	m.Block = dim3(get("Block Size"))
	m.Grid = dim3(get("Grid Size"))
	return m, nil
}

// dim3 reads "(256, 1, 1)", and "(1,024, 1, 1)" with a thousands
// separator (dims are separated by a comma and a space); zeros when it is
// not one.
func dim3(s string) [3]int32 {
	var out [3]int32
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "(") || !strings.HasSuffix(s, ")") {
		return out
	}
	parts := strings.Split(s[1:len(s)-1], ", ")
	if len(parts) != 3 {
		return out
	}
	for i, p := range parts {
		v, err := strconv.ParseInt(strings.ReplaceAll(strings.TrimSpace(p), ",", ""), 10, 32)
		if err != nil || v < 0 {
			return [3]int32{}
		}
		out[i] = int32(v)
	}
	return out
}

// badRows counts rows left out, remembering the first.
type badRows struct {
	n     int
	first string
}

func (b *badRows) add(line int, why string) {
	if b.n == 0 {
		b.first = fmt.Sprintf("line %d: %s", line, why)
	}
	b.n++
}

func (b *badRows) note(e *Export) {
	if b.n > 0 {
		e.Notes = append(e.Notes, fmt.Sprintf("%d row(s) could not be read and were left out (the first at %s)", b.n, b.first))
	}
}

// eachRow calls fn with every record after the header and its line; a
// record CSV cannot parse is counted as left out, and so is every row fn
// counts in bad. The rows left out end up in a note.
func (e *Export) eachRow(cr *csv.Reader, fn func(row []string, line int, bad *badRows)) error {
	var bad badRows
	for {
		row, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				bad.add(pe.Line, pe.Err.Error())
				continue
			}
			return fmt.Errorf("%s: %w", e.Path, err)
		}
		line, _ := cr.FieldPos(0)
		fn(row, line, &bad)
	}
	bad.note(e)
	return nil
}

func (e *Export) readDetails(cr *csv.Reader, col map[string]int) error {
	get := func(row []string, name string) string {
		if i, ok := col[name]; ok && i < len(row) {
			return strings.TrimSpace(row[i])
		}
		return ""
	}
	return e.eachRow(cr, func(row []string, line int, bad *badRows) {
		m, err := launchOf(row, col)
		if err != nil {
			bad.add(line, err.Error())
			return
		}
		m.Section = get(row, "Section Name")
		if rule := get(row, "Rule Name"); rule != "" && get(row, "Metric Name") == "" {
			m.Name = "rule:" + rule
			m.Text = strings.TrimSpace(get(row, "Rule Type") + ": " + get(row, "Rule Description"))
			if v, ok := number(get(row, "Estimated Speedup")); ok {
				m.Value = &v
				m.Unit = "%"
			}
			e.Metrics = append(e.Metrics, m)
			return
		}
		m.Name = get(row, "Metric Name")
		if m.Name == "" {
			return // a section's header row ("[]=" in the export)
		}
		if i := col["Metric Value"]; i >= len(row) {
			bad.add(line, fmt.Sprintf("metric %q has no value (the row has %d fields)", m.Name, len(row)))
			return
		}
		if !setValue(&m, get(row, "Metric Value"), get(row, "Metric Unit")) {
			return
		}
		e.Metrics = append(e.Metrics, m)
	})
}

func (e *Export) readRaw(cr *csv.Reader, header []string, col map[string]int) error {
	var units []string
	return e.eachRow(cr, func(row []string, line int, bad *badRows) {
		if i := col["ID"]; units == nil && (i >= len(row) || strings.TrimSpace(row[i]) == "") {
			units = row // the units row under the header
			return
		}
		m, err := launchOf(row, col)
		if err != nil {
			bad.add(line, err.Error())
			return
		}
		m.Section = "raw"
		for i, name := range header {
			if fixed[name] || strings.TrimSpace(name) == "" || i >= len(row) {
				continue
			}
			x := m
			x.Name = name
			unit := ""
			if i < len(units) {
				unit = units[i]
			}
			if setValue(&x, row[i], unit) {
				e.Metrics = append(e.Metrics, x)
			}
		}
	})
}

// setValue gives m its value in a normalised unit, or its text; false for
// a value that was not collected ("n/a", empty).
func setValue(m *Metric, raw, unit string) bool {
	raw = strings.TrimSpace(raw)
	if raw == "" || strings.EqualFold(raw, "n/a") {
		return false
	}
	v, ok := number(raw)
	if !ok {
		m.Text, m.Unit = raw, unit
		return true
	}
	m.Unit, v = normalise(unit, v)
	m.Value = &v
	return true
}

// number reads a value with thousands separators ("12,532,580,352").
func number(s string) (float64, bool) {
	s = strings.ReplaceAll(strings.TrimSpace(s), ",", "")
	if s == "" {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// scales maps ncu's units to a base unit and factor: bytes, nanoseconds,
// hertz and bytes per second; other units are kept as they are.
var scales = map[string]struct {
	unit   string
	factor float64
}{
	"byte": {"byte", 1}, "kbyte": {"byte", 1e3}, "mbyte": {"byte", 1e6}, "gbyte": {"byte", 1e9}, "tbyte": {"byte", 1e12},
	"kibyte": {"byte", 1 << 10}, "mibyte": {"byte", 1 << 20}, "gibyte": {"byte", 1 << 30},
	"nsecond": {"ns", 1}, "ns": {"ns", 1}, "usecond": {"ns", 1e3}, "us": {"ns", 1e3}, "msecond": {"ns", 1e6}, "ms": {"ns", 1e6},
	"second": {"ns", 1e9}, "s": {"ns", 1e9},
	"hz": {"hz", 1}, "khz": {"hz", 1e3}, "mhz": {"hz", 1e6}, "ghz": {"hz", 1e9},
	"byte/second": {"byte/s", 1}, "byte/s": {"byte/s", 1}, "kbyte/second": {"byte/s", 1e3}, "kbyte/s": {"byte/s", 1e3},
	"mbyte/second": {"byte/s", 1e6}, "mbyte/s": {"byte/s", 1e6}, "gbyte/second": {"byte/s", 1e9}, "gbyte/s": {"byte/s", 1e9},
	"tbyte/second": {"byte/s", 1e12}, "tbyte/s": {"byte/s", 1e12},
}

func normalise(unit string, v float64) (string, float64) {
	u := strings.TrimSpace(unit)
	if s, ok := scales[strings.ToLower(u)]; ok {
		return s.unit, v * s.factor
	}
	return u, v
}

// noteMissingSections says what a speed-of-light verdict will lack: an
// export without the Speed-of-Light section and without the raw
// throughput metrics that stand in for it.
func (e *Export) noteMissingSections() {
	have := map[string]bool{}
	for _, m := range e.Metrics {
		have[m.Section] = true
		have[m.Name] = true
	}
	sol := have["GPU Speed Of Light Throughput"] || have["Compute (SM) Throughput"] ||
		have["sm__throughput.avg.pct_of_peak_sustained_elapsed"] || have["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
	if !sol {
		e.Notes = append(e.Notes, "no GPU Speed Of Light Throughput section and no sm__throughput / gpu__compute_memory_throughput metrics: compute and memory speed of light are unknown for its kernels (profile with --section SpeedOfLight)")
	}
	if !have["Occupancy"] && !have["sm__warps_active.avg.pct_of_peak_sustained_active"] {
		e.Notes = append(e.Notes, "no Occupancy section: achieved and theoretical occupancy are unknown (profile with --section Occupancy)")
	}
}
