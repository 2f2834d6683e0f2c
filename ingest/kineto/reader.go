package kineto

import (
	"strings"

	"github.com/trainscope/trainscope/ingest/jsonscan"
	"github.com/trainscope/trainscope/ingest/trace"

	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

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
	n := jsonscan.JSONSize(f, st.Size())
	if opt.SizeHint == 0 {
		opt.SizeHint = n
	}
	if opt.TwoPassBytes > 0 && jsonscan.JSONSizeAtLeast(n, st.Size()) >= opt.TwoPassBytes {
		opt.slim = true
	}
	t, countersLeft, err := read(f, path, opt)
	if err != nil || !countersLeft || t.TwoPass() {
		return t, err
	}
	// a slim pass that met no slices (a memory timeline): its counters,
	// which it left for a second pass, are the trace; read it whole
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	opt.slim, opt.TwoPassBytes = false, 0
	return Read(f, path, opt)
}

// Read reads a trace from r; name is used in errors and for the rank
// fallback from the file name.
func Read(r io.Reader, name string, opt Options) (*Trace, error) {
	t, _, err := read(r, name, opt)
	return t, err
}

// read is Read, also saying whether a slim pass met counters and left
// them for a second pass.
func read(r io.Reader, name string, opt Options) (t *Trace, countersLeft bool, err error) {
	in, src, done, err := openJSON(r, name, opt)
	if err != nil {
		return nil, false, err
	}
	defer done()
	gz := in.Gzip != nil
	p := newParser(src, name, opt)
	// the trace and the errors hold copies of what they took from the
	// window (the builder interns every name it keeps): it goes back to
	// the pool for the next file once read returns
	defer p.s.Release()
	if err := p.run(); err != nil {
		var fe *FormatError
		if gz && errors.As(err, &fe) && fe.Msg == "" {
			fe.Msg = "truncated or corrupt gzip stream"
		}
		if gz && p.readErr != nil {
			return nil, false, &FormatError{Path: name, Offset: in.Compressed.N, Compressed: true,
				Msg:       fmt.Sprintf("corrupt or truncated gzip stream after %d bytes of JSON: %v", p.s.Consumed(), p.readErr),
				Truncated: errors.Is(p.readErr, io.ErrUnexpectedEOF)}
		}
		return nil, false, err
	}
	return p.trace, p.b.countersLeft, nil
}

// openJSON opens a trace's JSON, gzip or not; a gzip stream is inflated
// ahead in a goroutine of its own (unless opt.NoPrefetch) until done.
func openJSON(r io.Reader, name string, opt Options) (in *jsonscan.Input, src io.Reader, done func(), err error) {
	in, err = jsonscan.Open(r, name, "a Chrome-trace JSON object (PyTorch profiler trace)")
	if err != nil {
		return nil, nil, nil, err
	}
	if in.Gzip == nil || opt.NoPrefetch {
		return in, in.R, func() {}, nil
	}
	pf := newPrefetcher(in.R)
	return in, pf, func() { pf.Close() }, nil
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
	s       *jsonscan.Stream
	name    string
	opt     Options
	state   topState
	trace   *Trace
	ev      event
	readErr error
	b       builder

	// the earliest start and latest end of the events, relative to the
	// time base, and where they are (for checkBase)
	seenTS            bool
	minTS, maxEnd     int64
	minTSAt, maxEndAt int64
}

const initialWindow = jsonscan.PooledWindow

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
	p := &parser{s: jsonscan.NewStream(r, initialWindow), name: name, opt: opt, trace: t}
	p.b.init(t)
	p.b.sizeHint = opt.SizeHint
	p.b.slim = opt.slim
	if opt.slim {
		t.Slices.ReserveNarrow(0) // threads as indexes from the first row
	}
	switch {
	case opt.SizeHint > 0 && opt.slim:
		// a sixteenth of the low guess: the columns then grow once, early,
		// to the rows projected from the first bytes (projectRows), while
		// the arrays they leave are small. Grown from the whole guess,
		// they held the old arrays of 6.8M rows beside the new ones of 9M
		// (a 3 GB trace)
		p.b.reserve(int(min(opt.SizeHint/bytesPerEvent/16, 50_000_000)))
	case opt.SizeHint > 0:
		p.b.reserve(int(min(opt.SizeHint/bytesPerEvent, 50_000_000)))
	}
	return p
}

func (p *parser) run() error {
	err := p.scan()
	p.readErr = p.s.ReadErr
	var je *jsonscan.Error
	switch {
	case errors.As(err, &je) && je.Truncated:
		return p.truncated(je)
	case errors.As(err, &je):
		return &FormatError{Path: p.name, Offset: je.Offset, Msg: je.Msg}
	case err != nil:
		return err
	case p.readErr != nil:
		// the document ended but the stream behind it failed (a corrupt
		// gzip trailer): the data cannot be trusted
		return &FormatError{Path: p.name, Offset: p.s.Offset(), Msg: "read error: " + p.readErr.Error(),
			Truncated: errors.Is(p.readErr, io.ErrUnexpectedEOF)}
	}
	p.trace.JSONBytes = p.s.Offset()
	if err := p.checkBase(); err != nil {
		return err
	}
	return p.b.finish(p.opt)
}

// scan parses the document, unit by unit, to its end.
func (p *parser) scan() error {
	return p.s.Run(func(c *jsonscan.Cursor) bool {
		p.unit(cursor{c})
		return p.state == stDone
	})
}

// checkTimes refuses an event whose time or duration is outside what
// trainscope stores (stream.MinTimeNS to MaxTimeNS, durations to MaxDurNS),
// and remembers the earliest start and latest end for checkBase.
func (p *parser) checkTimes(at int64) {
	e := &p.ev
	if !e.hasTS {
		return
	}
	if e.ts < stream.MinTimeNS || e.ts > stream.MaxTimeNS {
		panic(&FormatError{Path: p.name, Offset: at,
			Msg: fmt.Sprintf("event %q: ts %d ns is outside the times trainscope stores (%d to %d ns)", jsonscan.Text(e.name), e.ts, stream.MinTimeNS, stream.MaxTimeNS)})
	}
	if e.dur > stream.MaxDurNS {
		panic(&FormatError{Path: p.name, Offset: at,
			Msg: fmt.Sprintf("event %q: dur %d ns is longer than trainscope stores (%d ns, 36 years)", jsonscan.Text(e.name), e.dur, stream.MaxDurNS)})
	}
	if end := e.ts + max(e.dur, 0); !p.seenTS || end > p.maxEnd {
		p.maxEnd, p.maxEndAt = end, at
	}
	if !p.seenTS || e.ts < p.minTS {
		p.minTS, p.minTSAt = e.ts, at
	}
	p.seenTS = true
}

// checkBase refuses a baseTimeNanoseconds that would carry an event's
// start or end out of range once added (it used to wrap them negative).
func (p *parser) checkBase() error {
	base := p.trace.BaseTimeNS
	if !p.seenTS || !p.trace.HasBaseTime || base == 0 {
		return nil
	}
	if base+p.maxEnd > stream.MaxTimeNS {
		return &FormatError{Path: p.name, Offset: p.maxEndAt,
			Msg: fmt.Sprintf("this event ends %d ns after baseTimeNanoseconds %d: past %d ns, the last time trainscope stores", p.maxEnd, base, stream.MaxTimeNS)}
	}
	if base+p.minTS < stream.MinTimeNS {
		return &FormatError{Path: p.name, Offset: p.minTSAt,
			Msg: fmt.Sprintf("this event starts %d ns before baseTimeNanoseconds %d: before %d ns, the first time trainscope stores", -p.minTS, base, stream.MinTimeNS)}
	}
	return nil
}

func (p *parser) truncated(je *jsonscan.Error) error {
	if p.readErr != nil {
		return &FormatError{Path: p.name, Offset: je.Offset, Msg: "read error: " + p.readErr.Error(), Truncated: true}
	}
	if je.Msg == "empty file" {
		return &FormatError{Path: p.name, Msg: "empty file: expected a Chrome-trace JSON object (PyTorch profiler trace)", Truncated: true}
	}
	what := "the end of the JSON document"
	switch p.state {
	case stEvents, stAfterEvent, stArrayEvents, stAfterArrayEvent:
		what = fmt.Sprintf("the rest of traceEvents (file truncated after %d complete events)", p.b.nEvents)
	}
	return &FormatError{Path: p.name, Offset: je.Offset, Msg: "unexpected end of file: expected " + what, Truncated: true}
}

// unit parses one step of the top-level grammar. It must not change parser
// state before it has read everything it needs from the window.
func (p *parser) unit(c cursor) {
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
		// keys decoded, escapes and all, as encoding/json has them: a
		// snapshot's "segm\u0065nts" is refused here as memsnap.Sniff takes
		// it, which readFile in package ingest relies on
		key := jsonscan.Text(c.Str())
		c.Expect(':', "':' after a key")
		if key == "traceEvents" {
			c.Expect('[', "'[' to start traceEvents")
			p.trace.HasEvents = true
			p.state = stEvents
			return
		}
		p.topValue(c, key)
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
		start := c.I
		c.parseEvent(&p.ev)
		p.checkTimes(p.s.At(start))
		p.b.commit(&p.ev, p.s.At(c.I))
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
func (p *parser) topValue(c cursor, key string) {
	t := p.trace
	start := c.I
	switch key {
	case "segments", "device_traces":
		panic(&FormatError{Path: p.name, Offset: p.s.At(start),
			Msg: snapshotMsg + "; analyze it with `trainscope profile --memory " + p.name + "`"})
	case "distributedInfo":
		raw := c.Raw()
		var d distributedInfo
		if err := json.Unmarshal(raw, &d); err != nil {
			panic(&FormatError{Path: p.name, Offset: p.s.At(start), Msg: "distributedInfo: " + err.Error()})
		}
		t.Dist = d.model()
	case "deviceProperties":
		raw := c.Raw()
		var d []deviceProps
		if err := json.Unmarshal(raw, &d); err == nil {
			t.Devices = devicesModel(d)
		}
	case "baseTimeNanoseconds":
		t.BaseTimeNS = c.Int()
		t.HasBaseTime = true
		if t.BaseTimeNS < 0 || t.BaseTimeNS > stream.MaxTimeNS {
			panic(&FormatError{Path: p.name, Offset: p.s.At(start),
				Msg: fmt.Sprintf("baseTimeNanoseconds %d is not a time since 1970 before 2116 (0 to %d)", t.BaseTimeNS, stream.MaxTimeNS)})
		}
	case "displayTimeUnit":
		raw := c.strOrSkip()
		t.DisplayTimeUnit = jsonscan.Text(raw)
	case "traceName":
		raw := c.strOrSkip()
		t.TraceName = jsonscan.Text(raw)
	case "host_name", "hostname":
		// trace metadata some profiler wrappers add (Kineto's addMetadata)
		raw := c.strOrSkip()
		t.Host = strings.TrimSpace(jsonscan.Text(raw))
	case "nodes":
		if c.WS() != '[' {
			c.Skip()
			return
		}
		t.Format = FormatExecTrace
		raw := c.Raw()
		var nodes []json.RawMessage
		if err := json.Unmarshal(raw, &nodes); err != nil {
			panic(&FormatError{Path: p.name, Offset: p.s.At(start), Msg: "execution trace nodes: " + err.Error()})
		}
		t.ETNodes = len(nodes)
	default:
		c.Skip()
	}
}

// RankFromName returns the rank a file name claims ("rank-3", "rank3",
// "worker_3", "..._rank12_dp0..."): trace.RankFromName.
func RankFromName(path string) (int, bool) { return trace.RankFromName(path) }

const snapshotMsg = "this is a CUDA memory snapshot (torch.cuda.memory._snapshot), not a profiler trace"

// IsMemorySnapshot reports whether err says the file was a CUDA memory
// snapshot rather than a trace, so that a caller can read it as one.
func IsMemorySnapshot(err error) bool {
	var fe *FormatError
	return errors.As(err, &fe) && strings.HasPrefix(fe.Msg, snapshotMsg)
}
