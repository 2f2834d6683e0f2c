package memsnap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/trainscope/trainscope/ingest/jsonscan"
	"github.com/trainscope/trainscope/stream"
)

// Snapshot is one snapshot file read into tables.
type Snapshot struct {
	Path     string
	Str      *stream.Strings
	Segments stream.MemSegmentTable
	Blocks   stream.MemBlockTable
	Events   stream.MemEventTable
	// Settings is allocator_settings as decoded JSON values.
	Settings map[string]any
	// Devices is how many per-device trace lists device_traces held.
	Devices   int
	JSONBytes int64
}

// ReadFile reads a snapshot file (.json or .json.gz, detected by content).
func ReadFile(path string) (*Snapshot, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path)
}

type state int

const (
	stStart state = iota
	stKey
	stAfterValue
	stSegments
	stAfterSegment
	stDevices
	stEvents
	stAfterEvent
	stAfterDevice
	stDone
)

type reader struct {
	snap   *Snapshot
	name   string
	s      *jsonscan.Stream // for the offsets of refused values
	state  state
	device int32
	seq    int64
	fatal  error
	blocks []block // blocks of the segment being parsed
	site   []byte  // scratch for allocation sites
}

type block struct {
	address, size, requested int64
	state, frame             int32
}

// Read reads a snapshot from r; name is used in errors.
func Read(r io.Reader, name string) (*Snapshot, error) {
	in, err := jsonscan.Open(r, name, "a CUDA memory snapshot (JSON from torch.cuda.memory._snapshot())")
	if err != nil {
		return nil, err
	}
	str := stream.NewStrings()
	snap := &Snapshot{Path: name, Str: str}
	snap.Segments.Str, snap.Blocks.Str, snap.Events.Str = str, str, str
	rd := &reader{snap: snap, name: name, device: -1}
	s := jsonscan.NewStream(in.R, 1<<20)
	rd.s = s
	err = s.Run(rd.unit)
	if rd.fatal != nil {
		return nil, rd.fatal
	}
	if err != nil {
		if in.Gzip != nil && s.ReadErr != nil {
			return nil, &jsonscan.FileError{Path: name, Offset: in.Compressed.N, Compressed: true,
				Msg: fmt.Sprintf("corrupt or truncated gzip stream after %d bytes of JSON: %v", s.Offset(), s.ReadErr), Truncated: true}
		}
		if je, ok := err.(*jsonscan.Error); ok {
			msg := je.Msg
			if je.Truncated && je.Msg != "empty file" {
				msg += fmt.Sprintf(": the snapshot is cut short (%d segments, %d trace entries read)", snap.Segments.Len(), snap.Events.Len())
			}
			if je.Msg == "empty file" {
				msg = "empty file: expected a CUDA memory snapshot"
			}
			return nil, &jsonscan.FileError{Path: name, Offset: je.Offset, Msg: msg, Truncated: je.Truncated}
		}
		return nil, err
	}
	snap.JSONBytes = s.Offset()
	return snap, nil
}

// unit parses one step of the document: a top-level key and its value, one
// segment, or one trace entry. It changes state only after its input is
// complete, so that a re-run after a refill is harmless.
func (rd *reader) unit(c *jsonscan.Cursor) bool {
	switch rd.state {
	case stStart:
		c.Expect('{', "a JSON object (a CUDA memory snapshot)")
		rd.state = stKey
	case stKey:
		if c.WS() == '}' {
			c.I++
			rd.state = stDone
			return true
		}
		key := c.Str()
		c.Expect(':', "':' after a key")
		switch string(key) {
		case "segments":
			c.Expect('[', "'[' to start segments")
			rd.state = stSegments
		case "device_traces":
			c.Expect('[', "'[' to start device_traces")
			rd.state = stDevices
		case "allocator_settings":
			raw := c.Raw()
			var m map[string]any
			if json.Unmarshal(raw, &m) == nil {
				rd.snap.Settings = m
			}
			rd.state = stAfterValue
		case "traceEvents":
			rd.fatal = &jsonscan.FileError{Path: rd.name, Msg: "this is a PyTorch profiler trace, not a memory snapshot; analyze it with `trainscope analyze " + rd.name + "`"}
			return true
		default:
			c.Skip()
			rd.state = stAfterValue
		}
	case stAfterValue:
		switch c.WS() {
		case ',':
			c.I++
			rd.state = stKey
		case '}':
			c.I++
			rd.state = stDone
			return true
		default:
			c.Fail("',' or '}' after a top-level value")
		}
	case stSegments:
		if c.WS() == ']' {
			c.I++
			rd.state = stAfterValue
			return false
		}
		rd.segment(c)
		rd.state = stAfterSegment
	case stAfterSegment:
		rd.state = rd.next(c, stSegments, stAfterValue, "segments")
	case stDevices:
		switch c.WS() {
		case ']':
			c.I++
			rd.state = stAfterValue
		case '[':
			c.I++
			rd.device++
			rd.snap.Devices++
			rd.state = stEvents
		default:
			c.Fail("'[' starting one device's trace entries")
		}
	case stEvents:
		if c.WS() == ']' {
			c.I++
			rd.state = stAfterDevice
			return false
		}
		rd.event(c)
		rd.state = stAfterEvent
	case stAfterEvent:
		rd.state = rd.next(c, stEvents, stAfterDevice, "trace entries")
	case stAfterDevice:
		rd.state = rd.next(c, stDevices, stAfterValue, "device_traces")
	}
	return false
}

// next reads the ',' or ']' after an array element.
func (rd *reader) next(c *jsonscan.Cursor, more, end state, what string) state {
	switch c.WS() {
	case ',':
		c.I++
		return more
	case ']':
		c.I++
		return end
	}
	c.Fail("',' or ']' between " + what)
	return end
}

func (rd *reader) segment(c *jsonscan.Cursor) {
	var device, address, total, allocated, active, requested, strm int64
	var segType, pool []byte
	expandable := false
	frame := int32(-1)
	rd.blocks = rd.blocks[:0]
	c.Object(func(key []byte) {
		switch string(key) {
		case "device":
			device = c.Int()
		case "address":
			address = c.Int()
		case "total_size":
			total = rd.size(c, "segment total_size")
		case "allocated_size":
			allocated = rd.size(c, "segment allocated_size")
		case "active_size":
			active = rd.size(c, "segment active_size")
		case "requested_size":
			requested = rd.size(c, "segment requested_size")
		case "stream":
			strm = c.Int()
		case "segment_type":
			segType = c.Str()
		case "segment_pool_id":
			pool = compact(c.Raw())
		case "is_expandable":
			expandable = c.Bool()
		case "frames":
			frame = rd.frames(c)
		case "blocks":
			c.Array(func() { rd.block(c) })
		default:
			c.Skip()
		}
	})
	t := &rd.snap.Segments
	str := rd.snap.Str
	t.Device.Append(int32(device))
	t.Address.Append(address)
	t.Total.Append(total)
	t.Allocated.Append(allocated)
	t.Active.Append(active)
	t.Requested.Append(requested)
	t.Stream.Append(strm)
	t.SegmentType.Append(str.IDBytes(segType))
	if len(pool) == 0 {
		pool = []byte("[0,0]")
	}
	t.Pool.Append(str.IDBytes(pool))
	t.Expandable = append(t.Expandable, expandable)
	t.Blocks.Append(int32(len(rd.blocks)))
	t.Frame.AppendOpt(frame, frame >= 0)
	b := &rd.snap.Blocks
	for _, bl := range rd.blocks {
		b.Device.Append(int32(device))
		b.SegmentAddress.Append(address)
		b.Address.Append(bl.address)
		b.Size.Append(bl.size)
		b.Requested.Append(bl.requested)
		b.State.Append(bl.state)
		b.Frame.AppendOpt(bl.frame, bl.frame >= 0)
	}
}

func (rd *reader) block(c *jsonscan.Cursor) {
	bl := block{frame: -1}
	var st []byte
	c.Object(func(key []byte) {
		switch string(key) {
		case "address":
			bl.address = c.Int()
		case "size":
			bl.size = rd.size(c, "block size")
		case "requested_size":
			bl.requested = rd.size(c, "block requested_size")
		case "state":
			st = c.Str()
		case "frames":
			bl.frame = rd.frames(c)
		default:
			c.Skip()
		}
	})
	bl.state = rd.snap.Str.IDBytes(st)
	rd.blocks = append(rd.blocks, bl)
}

func (rd *reader) event(c *jsonscan.Cursor) {
	var action []byte
	var addr, size, strm, timeUS, free int64
	var has uint8
	frame := int32(-1)
	c.Object(func(key []byte) {
		switch string(key) {
		case "action":
			action = c.Str()
		case "addr":
			addr, has = c.Int(), has|1
		case "size":
			size, has = rd.size(c, "trace entry size"), has|2
		case "stream":
			strm, has = c.Int(), has|4
		case "time_us":
			timeUS, has = rd.timeUS(c), has|8
		case "device_free":
			free, has = rd.size(c, "trace entry device_free"), has|16
		case "frames":
			frame = rd.frames(c)
		default:
			c.Skip()
		}
	})
	t := &rd.snap.Events
	t.Device.Append(max(rd.device, 0))
	t.Seq.Append(rd.seq)
	rd.seq++
	t.Action.Append(rd.snap.Str.IDBytes(action))
	t.Addr.AppendOpt(addr, has&1 != 0)
	t.Size.AppendOpt(size, has&2 != 0)
	t.Stream.AppendOpt(strm, has&4 != 0)
	t.TS.AppendOpt(timeUS*1000, has&8 != 0)
	t.DeviceFree.AppendOpt(free, has&16 != 0)
	t.Frame.AppendOpt(frame, frame >= 0)
}

// size reads a size in bytes (what names it in errors): a JSON number, or
// a string holding one, from 0 to stream.MaxMemBytes. Anything else
// stops the read with the file and the offset of the value: a negative
// size, or one beyond int64 (1e30, 99999999999999999999), is a corrupt
// snapshot, and clamping it would report memory that was never there.
func (rd *reader) size(c *jsonscan.Cursor, what string) int64 {
	c.WS()
	at := c.I
	raw := c.Raw()
	v, ok := sizeOf(raw)
	if !ok {
		panic(&jsonscan.FileError{Path: rd.name, Offset: rd.s.At(at),
			Msg: fmt.Sprintf("%s %s is not a size in bytes (0 to %d): the snapshot is corrupt", what, clip(raw), stream.MaxMemBytes)})
	}
	return v
}

// clip is a raw value as an error shows it.
func clip(raw []byte) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}

// sizeOf is the size a raw JSON value holds, and whether it is one from 0
// to stream.MaxMemBytes. A string that holds no number reads as 0, as
// ParseIntString reads it; a fraction is cut off.
func sizeOf(raw []byte) (int64, bool) {
	if len(raw) > 0 && raw[0] == '"' {
		body := bytes.TrimSpace(bytes.Trim(raw, `"`))
		if len(body) > 2 && body[0] == '0' && (body[1] == 'x' || body[1] == 'X') {
			v, err := strconv.ParseUint(string(body[2:]), 16, 64)
			if err != nil {
				return 0, !errors.Is(err, strconv.ErrRange)
			}
			return int64(v), v <= uint64(stream.MaxMemBytes)
		}
		if _, ok := jsonscan.ParseInt(body); !ok {
			return 0, true
		}
		raw = body
	}
	if v, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
		return v, v >= 0 && v <= stream.MaxMemBytes
	} else if errors.Is(err, strconv.ErrRange) {
		return 0, false
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		// ErrRange: beyond float64 (1e400); else not a number at all,
		// which Int would have refused too
		return 0, false
	}
	return int64(f), f >= 0 && f <= float64(stream.MaxMemBytes)
}

// timeUS reads an allocator event's time_us, refusing a time that does not
// fit the ts column in ns (stream.MinTimeNS to stream.MaxTimeNS): times a
// thousand, it would wrap around.
func (rd *reader) timeUS(c *jsonscan.Cursor) int64 {
	c.WS()
	at := c.I
	v := c.Int()
	if v < stream.MinTimeNS/1000 || v > stream.MaxTimeNS/1000 {
		panic(&jsonscan.FileError{Path: rd.name, Offset: rd.s.At(at),
			Msg: fmt.Sprintf("trace entry time_us %s is not a time this reader can store (%d to %d): the snapshot is corrupt", clip(c.B[at:c.I]), stream.MinTimeNS/1000, stream.MaxTimeNS/1000)})
	}
	return v
}

// frames reads a stack and returns the string id of its allocation site:
// the first frame outside torch, c10 and CPython internals ("file:line
// function"), else the first frame with a file, else -1.
func (rd *reader) frames(c *jsonscan.Cursor) int32 {
	best, fallback := -1, -1
	var bestFile, bestName, fbFile, fbName []byte
	var bestLine, fbLine int64
	i := 0
	c.Array(func() {
		var file, name []byte
		var line int64
		c.Object(func(key []byte) {
			switch string(key) {
			case "filename":
				file = c.Str()
			case "name":
				name = c.Str()
			case "line":
				line = c.Int()
			default:
				c.Skip()
			}
		})
		if fallback < 0 && len(file) > 0 && string(file) != "??" {
			fallback, fbFile, fbName, fbLine = i, file, name, line
		}
		if best < 0 && userFrame(file, name) {
			best, bestFile, bestName, bestLine = i, file, name, line
		}
		i++
	})
	switch {
	case best >= 0:
		return rd.siteID(bestFile, bestName, bestLine)
	case fallback >= 0:
		return rd.siteID(fbFile, fbName, fbLine)
	}
	return -1
}

func userFrame(file, name []byte) bool {
	if len(file) == 0 || string(file) == "??" {
		return false
	}
	for _, internal := range [][]byte{[]byte("/torch/"), []byte("\\\\torch\\\\"), []byte("<frozen"), []byte("/python3."), []byte("/lib/python"),
		[]byte("site-packages"), []byte("dist-packages")} {
		if bytes.Contains(file, internal) {
			return false
		}
	}
	for _, p := range [][]byte{[]byte("torch::"), []byte("c10::"), []byte("at::")} {
		if bytes.HasPrefix(name, p) {
			return false
		}
	}
	return true
}

func (rd *reader) siteID(file, name []byte, line int64) int32 {
	if bytes.IndexByte(file, '\\') >= 0 {
		file = []byte(jsonscan.Unescape(file))
	}
	if bytes.IndexByte(name, '\\') >= 0 {
		name = []byte(jsonscan.Unescape(name))
	}
	s := rd.site[:0]
	s = append(s, file...)
	s = append(s, ':')
	s = strconv.AppendInt(s, line, 10)
	s = append(s, ' ')
	s = append(s, name...)
	rd.site = s
	return rd.snap.Str.IDBytes(s)
}

// compact drops the whitespace from a small raw JSON value.
func compact(raw []byte) []byte {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return raw
	}
	return b.Bytes()
}
