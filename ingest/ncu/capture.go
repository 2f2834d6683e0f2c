package ncu

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// What ncu writes to stdout beside its CSV when the export is captured
// with `ncu --csv ... > k.csv`: its own log lines (==PROF== Connected to
// process ..., ==PROF== Profiling "kernel" - 0: 0%....100% - 38 passes,
// ==WARNING== ..., ==ERROR== ...), blank lines, and whatever the profiled
// program printed before ncu wrote the table. The reader skips them and
// says how many it skipped.

// logLine matches one of ncu's own log lines.
var logLine = regexp.MustCompile(`^==[A-Z]+==`)

// sniffLines is how far into a file IsExport looks for the CSV header, past
// ncu's log lines and the program's output.
const sniffLines = 4096

// isHeader says whether line is the header of an ncu CSV export.
func isHeader(line string) bool {
	line = strings.TrimPrefix(line, "\ufeff")
	return strings.HasPrefix(line, `"ID"`) && strings.Contains(line, `"Kernel Name"`)
}

// IsExport says whether path is an ncu CSV export (a .csv file): a header
// row with "ID" and "Kernel Name" columns within its first lines, after
// ncu's log lines, blank lines and the profiled program's output when its
// stdout was captured.
func IsExport(path string) bool {
	if !strings.EqualFold(filepath.Ext(path), ".csv") {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	br := bufio.NewReaderSize(f, 1<<16)
	for range sniffLines {
		line, err := br.ReadString('\n')
		if isHeader(line) {
			return true
		}
		if err != nil {
			return false
		}
	}
	return false
}

// SniffHead is IsExport from the file's first bytes (head): a .csv whose
// header row is among the complete lines head holds. When head is not the
// whole file (full) and ends before sniffLines lines without the header,
// the file is read further, as IsExport does.
func SniffHead(path string, head []byte, full bool) bool {
	if !strings.EqualFold(filepath.Ext(path), ".csv") {
		return false
	}
	rest := head
	for range sniffLines {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok && full {
			return IsExport(path) // the line goes on past head
		}
		if isHeader(string(line)) {
			return true
		}
		if !ok {
			return false
		}
		rest = after
	}
	return false
}

// skipped counts the lines a capture filter left out.
type skipped struct {
	log, blank, before int
	firstWarning       string // the first ==WARNING== or ==ERROR== line
}

// notes says what was skipped, for Export.Notes; nil when nothing was.
func (s skipped) notes() []string {
	var out []string
	switch {
	case s.log > 0:
		n := fmt.Sprintf("skipped %d of ncu's own log line(s) (==PROF==, ==WARNING==, ...) and %d blank line(s): a captured stdout", s.log, s.blank)
		if s.firstWarning != "" {
			n += "; the first warning: " + s.firstWarning
		}
		out = append(out, n)
	case s.blank > 0:
		out = append(out, fmt.Sprintf("skipped %d blank line(s)", s.blank))
	}
	if s.before > 0 {
		out = append(out, fmt.Sprintf("skipped %d line(s) before the CSV header that are not ncu's (the profiled program's output)", s.before))
	}
	return out
}

// captureFilter passes an export's CSV through and turns every other line
// (before the header: all of them; after it: ncu's log lines and blank
// lines outside a quoted field) into an empty line, which encoding/csv
// ignores but counts, so that row numbers in errors stay the file's.
type captureFilter struct {
	br      *bufio.Reader
	buf     []byte // what is left of the current line to hand out
	header  bool   // the header was seen
	inQuote bool   // the line so far ends inside a quoted field
	done    bool
	err     error
	skipped skipped
	// firstOther is the first line before the header that is neither
	// ncu's nor blank: what a file with no header has in its place
	firstOther string
}

func newCaptureFilter(r io.Reader) *captureFilter {
	return &captureFilter{br: bufio.NewReaderSize(r, 1<<16)}
}

func (c *captureFilter) Read(p []byte) (int, error) {
	for len(c.buf) == 0 {
		if c.done {
			return 0, c.err
		}
		line, err := c.br.ReadBytes('\n')
		if err != nil {
			c.done, c.err = true, err
			if len(line) == 0 {
				return 0, err
			}
		}
		c.buf = c.filter(line)
	}
	n := copy(p, c.buf)
	c.buf = c.buf[n:]
	return n, nil
}

var newline = []byte("\n")

// filter is what the CSV reader gets of one line of the file.
func (c *captureFilter) filter(line []byte) []byte {
	if c.inQuote {
		c.inQuote = bytes.Count(line, []byte(`"`))%2 == 0
		return line
	}
	text := strings.TrimRight(string(line), "\r\n")
	switch {
	case !c.header && isHeader(text):
		c.header = true
	case strings.TrimSpace(text) == "":
		c.skipped.blank++
		return newline
	case logLine.MatchString(text):
		c.skipped.log++
		if c.skipped.firstWarning == "" && (strings.HasPrefix(text, "==WARNING==") || strings.HasPrefix(text, "==ERROR==")) {
			c.skipped.firstWarning = strings.TrimSpace(text)
		}
		return newline
	case !c.header:
		if c.skipped.before == 0 {
			c.firstOther = text
		}
		c.skipped.before++
		return newline
	}
	c.inQuote = bytes.Count(line, []byte(`"`))%2 == 1
	return line
}
