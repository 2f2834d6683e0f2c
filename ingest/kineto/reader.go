package kineto

import (
	"github.com/trainscope/trainscope/ingest/jsonscan"

	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/trainscope/trainscope/stream"
)

// ReadFile reads one trace file (.json or .json.gz, detected by content).
func ReadFile(path string, opt Options) (*Trace, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if st.IsDir() {
		return nil, fmt.Errorf("%s: is a directory", path)
	}
	if opt.SizeHint == 0 {
		opt.SizeHint = jsonscan.JSONSize(f, st.Size())
	}
	return Read(f, path, opt)
}

// Read reads a trace from r; name is used in errors and for the rank
// fallback from the file name.
func Read(r io.Reader, name string, opt Options) (*Trace, error) {
	in, err := jsonscan.Open(r, name, "a Chrome-trace JSON object (PyTorch profiler trace)")
	if err != nil {
		return nil, err
	}
	src := in.R
	gz := in.Gzip != nil
	if gz && !opt.NoPrefetch {
		pf := newPrefetcher(in.Gzip)
		defer pf.Close()
		src = pf
	}
	p := newParser(src, name, opt)
	if err := p.run(); err != nil {
		var fe *FormatError
		if gz && errors.As(err, &fe) && fe.Msg == "" {
			fe.Msg = "truncated or corrupt gzip stream"
		}
		if gz && p.readErr != nil {
			return nil, &FormatError{Path: name, Offset: in.Compressed.N, Compressed: true,
				Msg: fmt.Sprintf("corrupt or truncated gzip stream after %d bytes of JSON: %v", p.s.base+int64(p.s.end), p.readErr)}
		}
		return nil, err
	}
	return p.trace, nil
}

// window is the parser's refillable view of the input.
type window struct {
	r    io.Reader
	buf  []byte
	end  int   // valid bytes in buf
	base int64 // stream offset of buf[0]
	eof  bool
}

// refill keeps buf[keep:end], moves it to the front and reads more. It
// reports false when no more bytes can come.
func (w *window) refill(keep int) (bool, error) {
	if w.eof {
		return false, nil
	}
	if keep > 0 {
		copy(w.buf, w.buf[keep:w.end])
		w.end -= keep
		w.base += int64(keep)
	}
	if w.end == len(w.buf) {
		nb := make([]byte, 2*len(w.buf))
		copy(nb, w.buf[:w.end])
		w.buf = nb
	}
	for w.end < len(w.buf) {
		n, err := w.r.Read(w.buf[w.end:])
		w.end += n
		if err == io.EOF {
			w.eof = true
			break
		}
		if err != nil {
			// a read error is final: the next refill must report no more
			// input, or run would retry the same short unit forever
			w.eof = true
			return w.end > 0, err
		}
		if n == 0 {
			break
		}
	}
	return true, nil
}

type topState int

const (
	stStart           topState = iota
	stKey                      // inside the top-level object, expecting a key or '}'
	stAfterValue               // after a top-level value, expecting ',' or '}'
	stEvents                   // inside traceEvents, expecting an event or ']'
	stAfterEvent               // after an event, expecting ',' or ']'
	stArrayEvents              // top-level array of events
	stAfterArrayEvent          // ...
	stTimeline                 // top-level array of [ts, action, bytes, category]
	stAfterTimeline
	stDone
)

type parser struct {
	s       window
	name    string
	opt     Options
	state   topState
	pos     int // committed position in s.buf
	trace   *Trace
	ev      event
	readErr error
	b       builder
}

const initialWindow = 1 << 20

// bytesPerEvent is a low estimate of JSON bytes per duration event in real
// traces (300-600 here), used to size columns from a file's size.
const bytesPerEvent = 450

func newParser(r io.Reader, name string, opt Options) *parser {
	str := stream.NewStrings()
	t := &Trace{
		Path: name, Format: FormatChrome, Str: str,
		Slices:       stream.NewSliceTable(str, true),
		Counts:       map[string]int{},
		ThreadNames:  map[int64]string{},
		ProcessNames: map[int64]string{},
	}
	t.Counters.Str = str
	p := &parser{s: window{r: r, buf: make([]byte, initialWindow)}, name: name, opt: opt, trace: t}
	p.b.init(t)
	if opt.SizeHint > 0 {
		t.Slices.Reserve(int(min(opt.SizeHint/bytesPerEvent, 50_000_000)))
	}
	return p
}

func (p *parser) errAt(off int, msg string) error {
	return &FormatError{Path: p.name, Offset: p.s.base + int64(off), Msg: msg}
}

func (p *parser) run() error {
	for p.state != stDone {
		err := p.chunk()
		if err == nil {
			continue
		}
		if err != errNeedMore {
			return err
		}
		more, rerr := p.s.refill(p.pos)
		p.pos = 0
		if rerr != nil {
			p.readErr = rerr
			if !more {
				return p.errAt(p.s.end, "read error")
			}
		}
		if !more {
			return p.truncated()
		}
	}
	// trailing bytes after the top-level value must be whitespace
	for {
		for ; p.pos < p.s.end; p.pos++ {
			switch p.s.buf[p.pos] {
			case ' ', '\n', '\r', '\t', 0:
			default:
				return p.errAt(p.pos, "unexpected data after the end of the JSON document")
			}
		}
		more, rerr := p.s.refill(p.pos)
		p.pos = 0
		if rerr != nil {
			p.readErr = rerr
			return p.errAt(p.s.end, "read error")
		}
		if !more {
			break
		}
	}
	if p.readErr != nil {
		// the document ended but the stream behind it failed (a corrupt
		// gzip trailer): the data cannot be trusted
		return p.errAt(p.s.end, "read error: "+p.readErr.Error())
	}
	p.trace.JSONBytes = p.s.base + int64(p.s.end)
	return p.b.finish(p.opt)
}

var errNeedMore = errors.New("need more input")

func (p *parser) truncated() error {
	if p.readErr != nil {
		return p.errAt(p.s.end, "read error: "+p.readErr.Error())
	}
	if p.s.base+int64(p.s.end) == 0 || p.onlySpace() {
		return p.errAt(0, "empty file: expected a Chrome-trace JSON object (PyTorch profiler trace)")
	}
	what := "the end of the JSON document"
	switch p.state {
	case stEvents, stAfterEvent, stArrayEvents, stAfterArrayEvent:
		what = fmt.Sprintf("the rest of traceEvents (file truncated after %d complete events)", p.b.nEvents)
	}
	return p.errAt(p.s.end, "unexpected end of file: expected "+what)
}

func (p *parser) onlySpace() bool {
	return len(bytes.TrimSpace(p.s.buf[:p.s.end])) == 0 && p.s.base == 0
}

// chunk parses units until the window runs out (errNeedMore), the document
// ends, or the input is bad.
func (p *parser) chunk() (err error) {
	c := cursor{jsonscan.Cursor{B: p.s.buf[:p.s.end], I: p.pos}}
	defer func() {
		if r := recover(); r != nil {
			switch v := r.(type) {
			case jsonscan.Short:
				err = errNeedMore
			case *jsonscan.SyntaxError:
				err = p.errAt(v.At, "expected "+v.Want+p.found(v.At))
			case *FormatError:
				err = v
			default:
				panic(r)
			}
		}
	}()
	for p.state != stDone {
		p.unit(&c)
		p.pos = c.I
	}
	return nil
}

func (p *parser) found(at int) string {
	if at >= p.s.end {
		return ""
	}
	end := min(at+16, p.s.end)
	return fmt.Sprintf(", found %q", p.s.buf[at:end])
}

// unit parses one step of the top-level grammar. It must not change parser
// state before it has read everything it needs from the window.
func (p *parser) unit(c *cursor) {
	switch p.state {
	case stStart:
		switch c.WS() {
		case '{':
			c.I++
			p.state = stKey
		case '[':
			c.I++
			switch c.WS() {
			case '{', ']':
				p.trace.HasEvents = true
				p.state = stArrayEvents
			case '[':
				p.trace.Format = FormatMemoryTimeline
				p.state = stTimeline
			default:
				c.Fail("an array of trace events")
			}
		default:
			c.Fail("a JSON object '{' (PyTorch profiler Chrome trace)")
		}
	case stKey:
		if c.WS() == '}' {
			c.I++
			p.state = stDone
			return
		}
		key := c.Str()
		c.Expect(':', "':' after a key")
		if string(key) == "traceEvents" {
			c.Expect('[', "'[' to start traceEvents")
			p.trace.HasEvents = true
			p.state = stEvents
			return
		}
		p.topValue(c, string(key))
		p.state = stAfterValue
	case stAfterValue:
		switch c.WS() {
		case ',':
			c.I++
			p.state = stKey
		case '}':
			c.I++
			p.state = stDone
		default:
			c.Fail("',' or '}' after a top-level value")
		}
	case stEvents, stArrayEvents:
		if c.WS() == ']' {
			c.I++
			p.state = p.afterEvents()
			return
		}
		c.parseEvent(&p.ev)
		p.b.commit(&p.ev, p.s.base+int64(c.I))
		if p.state == stEvents {
			p.state = stAfterEvent
		} else {
			p.state = stAfterArrayEvent
		}
	case stAfterEvent, stAfterArrayEvent:
		switch c.WS() {
		case ',':
			c.I++
			if p.state == stAfterEvent {
				p.state = stEvents
			} else {
				p.state = stArrayEvents
			}
		case ']':
			c.I++
			p.state = p.afterEvents()
		default:
			c.Fail("',' or ']' between trace events")
		}
	case stTimeline:
		if c.WS() == ']' {
			c.I++
			p.state = stDone
			return
		}
		var v [4]int64
		c.Expect('[', "a [timestamp, action, bytes, category] entry")
		for k := range 4 {
			if k > 0 {
				c.Expect(',', "',' in a memory timeline entry")
			}
			v[k] = c.Int()
		}
		c.Expect(']', "']' closing a memory timeline entry")
		p.b.timeline(v)
		p.state = stAfterTimeline
	case stAfterTimeline:
		switch c.WS() {
		case ',':
			c.I++
			p.state = stTimeline
		case ']':
			c.I++
			p.state = stDone
		default:
			c.Fail("',' or ']' between memory timeline entries")
		}
	}
}

func (p *parser) afterEvents() topState {
	if p.state == stEvents || p.state == stAfterEvent {
		return stAfterValue
	}
	return stDone
}

// topValue handles one top-level key other than traceEvents.
func (p *parser) topValue(c *cursor, key string) {
	t := p.trace
	start := c.I
	switch key {
	case "segments", "device_traces":
		panic(&FormatError{Path: p.name, Offset: p.s.base + int64(start),
			Msg: "this is a CUDA memory snapshot (torch.cuda.memory._snapshot), not a profiler trace; analyze it with `trainscope profile --memory " + p.name + "`"})
	case "distributedInfo":
		raw := c.Raw()
		var d DistributedInfo
		if err := json.Unmarshal(raw, &d); err != nil {
			panic(&FormatError{Path: p.name, Offset: p.s.base + int64(start), Msg: "distributedInfo: " + err.Error()})
		}
		t.Dist = d
	case "deviceProperties":
		raw := c.Raw()
		var d []DeviceProps
		if err := json.Unmarshal(raw, &d); err == nil {
			t.Devices = d
		}
	case "baseTimeNanoseconds":
		t.BaseTimeNS = c.Int()
		t.HasBaseTime = true
	case "displayTimeUnit":
		raw := c.strOrSkip()
		t.DisplayTimeUnit = jsonscan.Text(raw)
	case "traceName":
		raw := c.strOrSkip()
		t.TraceName = jsonscan.Text(raw)
	case "nodes":
		if c.WS() != '[' {
			c.Skip()
			return
		}
		t.Format = FormatExecTrace
		raw := c.Raw()
		var nodes []json.RawMessage
		if err := json.Unmarshal(raw, &nodes); err != nil {
			panic(&FormatError{Path: p.name, Offset: p.s.base + int64(start), Msg: "execution trace nodes: " + err.Error()})
		}
		t.ETNodes = len(nodes)
	default:
		c.Skip()
	}
}

var rankInName = regexp.MustCompile(`(?i)(?:^|[^a-z])(?:rank|worker)[-_]?(\d+)`)

// RankFromName returns the rank a file name claims ("rank-3", "rank3",
// "worker_3", "..._rank12_dp0...").
func RankFromName(path string) (int, bool) {
	m := rankInName.FindStringSubmatch(filepath.Base(path))
	if m == nil {
		return 0, false
	}
	n, err := strconv.Atoi(m[1])
	return n, err == nil
}
