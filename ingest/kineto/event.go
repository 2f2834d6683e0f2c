package kineto

import (
	"bytes"

	"github.com/trainscope/trainscope/ingest/jsonscan"
)

// event holds one traceEvents entry while it is parsed. Byte slices point
// into the reader's window and are valid until the event is committed.
type event struct {
	ph           byte
	scope        byte // instant scope: g, p, t
	bp           byte // flow binding point
	name, cat    []byte
	pid, tid     int64
	tidStr       []byte // tid given as a non-numeric string
	pidStr       []byte
	ts, dur      int64 // ns, relative to the trace's time base
	hasTS        bool
	hasDur       bool
	id           int64
	hasID        bool
	args         eventArgs
	counterNames [maxCounterSeries][]byte
	counterVals  [maxCounterSeries]float64
	nCounters    int
}

const maxCounterSeries = 16

type eventArgs struct {
	has                           uint32
	correlation, externalID       int64
	device                        int64
	stream                        int64
	grid, block                   [3]int64
	registers, sharedMem          int64
	occupancy                     float64
	bytes                         int64
	collName, dtype               []byte
	inElems, outElems, groupSize  int64
	pgName, pgDesc, pgRanks       []byte
	totalAllocated, totalReserved int64
	deviceID, deviceType          int64
	name                          []byte
	inputDims, inputType          []byte // raw JSON, read for modelled operators
	concrete                      []byte // "Concrete Inputs", raw JSON
}

// bits of eventArgs.has
const (
	aCorrelation uint32 = 1 << iota
	aExternalID
	aDevice
	aStream
	aGrid
	aBlock
	aRegisters
	aSharedMem
	aOccupancy
	aBytes
	aCollName
	aDtype
	aInElems
	aOutElems
	aGroupSize
	aPGName
	aPGDesc
	aPGRanks
	aTotalAllocated
	aTotalReserved
	aDeviceID
	aDeviceType
	aName
	aInputDims
	aInputType
	aConcrete
)

// detailArgs are the args stored in slices_detail's columns.
const detailArgs = aGrid | aBlock | aRegisters | aSharedMem | aOccupancy | aBytes | aCollName | aDtype |
	aInElems | aOutElems | aGroupSize | aPGName | aPGDesc | aPGRanks

// parseEvent parses one event object at the cursor into e.
func (c *cursor) parseEvent(e *event) {
	// reset only what parsing reads back; the counter arrays are bounded by nCounters
	e.ph, e.scope, e.bp = 0, 0, 0
	e.name, e.cat, e.tidStr, e.pidStr = nil, nil, nil, nil
	e.pid, e.tid, e.ts, e.dur, e.id = 0, 0, 0, 0, 0
	e.hasTS, e.hasDur, e.hasID = false, false, false
	e.args.has = 0
	e.nCounters = 0
	c.Expect('{', "an event object '{'")
	if c.WS() == '}' {
		c.I++
		return
	}
	argsAt := -1 // where args started, when they came before ph
	for {
		key := c.Str()
		c.Expect(':', "':' after an event key")
		switch string(key) {
		case "ph":
			v := c.Str()
			if len(v) > 0 {
				e.ph = v[0]
			}
		case "name":
			e.name = c.Str()
		case "cat":
			e.cat = c.Str()
		case "ts":
			e.ts = c.Micros()
			e.hasTS = true
		case "dur":
			e.dur = c.Micros()
			e.hasDur = true
		case "pid":
			if c.WS() == '"' {
				e.pidStr = c.Str()
				e.pid = parseIntOr(e.pidStr, -1)
			} else {
				e.pid = c.Int()
			}
		case "tid":
			if c.WS() == '"' {
				e.tidStr = c.Str()
				e.tid = parseIntOr(e.tidStr, -1)
			} else {
				e.tid = c.Int()
			}
		case "id":
			if c.WS() == '"' {
				raw := c.Str()
				e.id = parseIntOr(raw, 0)
			} else {
				e.id = c.Int()
			}
			e.hasID = true
		case "bp":
			v := c.Str()
			if len(v) > 0 {
				e.bp = v[0]
			}
		case "s":
			v := c.Str()
			if len(v) > 0 {
				e.scope = v[0]
			}
		case "args":
			if e.ph == 0 && c.WS() == '{' {
				argsAt = c.I
			}
			if c.WS() == '{' && e.ph == 'C' {
				c.parseCounterArgs(e)
			} else {
				c.parseArgs(&e.args)
			}
		default:
			c.Skip()
		}
		switch c.WS() {
		case ',':
			c.I++
		case '}':
			c.I++
			if argsAt >= 0 && e.ph == 'C' {
				// a counter's args came before its ph: read them again as series
				sub := cursor{&jsonscan.Cursor{B: c.B, I: argsAt}}
				sub.parseCounterArgs(e)
			}
			return
		default:
			c.Fail("',' or '}' in an event")
		}
	}
}

func parseIntOr(b []byte, def int64) int64 {
	if v, ok := jsonscan.ParseInt(bytes.TrimSpace(b)); ok {
		return v
	}
	return def
}

func (c *cursor) parseArgs(a *eventArgs) {
	if c.WS() != '{' {
		c.Skip()
		return
	}
	c.I++
	if c.WS() == '}' {
		c.I++
		return
	}
	for {
		key := c.Str()
		c.Expect(':', "':' after an args key")
		switch string(key) {
		case "correlation":
			a.correlation = c.Int()
			a.has |= aCorrelation
		case "External id":
			a.externalID = c.Int()
			a.has |= aExternalID
		case "device":
			a.device = c.Int()
			a.has |= aDevice
		case "stream":
			a.stream = c.Int()
			a.has |= aStream
		case "grid":
			if c.triple(&a.grid) {
				a.has |= aGrid
			}
		case "block":
			if c.triple(&a.block) {
				a.has |= aBlock
			}
		case "registers per thread":
			a.registers = c.Int()
			a.has |= aRegisters
		case "shared memory":
			a.sharedMem = c.Int()
			a.has |= aSharedMem
		case "est. achieved occupancy %":
			a.occupancy = c.Float()
			a.has |= aOccupancy
		case "bytes":
			a.bytes = c.Int()
			a.has |= aBytes
		case "Collective name":
			a.collName = c.strOrSkip()
			a.has |= aCollName
		case "dtype":
			a.dtype = c.strOrSkip()
			a.has |= aDtype
		case "In msg nelems":
			a.inElems = c.Int()
			a.has |= aInElems
		case "Out msg nelems":
			a.outElems = c.Int()
			a.has |= aOutElems
		case "Group size":
			a.groupSize = c.Int()
			a.has |= aGroupSize
		case "Process Group Name":
			a.pgName = c.strOrSkip()
			a.has |= aPGName
		case "Process Group Description":
			a.pgDesc = c.strOrSkip()
			a.has |= aPGDesc
		case "Process Group Ranks":
			if c.WS() == '"' {
				a.pgRanks = c.Str()
			} else {
				a.pgRanks = c.Raw()
			}
			a.has |= aPGRanks
		case "Total Allocated":
			a.totalAllocated = c.Int()
			a.has |= aTotalAllocated
		case "Total Reserved":
			a.totalReserved = c.Int()
			a.has |= aTotalReserved
		case "Device Id":
			a.deviceID = c.Int()
			a.has |= aDeviceID
		case "Device Type":
			a.deviceType = c.Int()
			a.has |= aDeviceType
		case "name":
			a.name = c.strOrSkip()
			a.has |= aName
		case "Input Dims":
			a.inputDims = c.Raw()
			a.has |= aInputDims
		case "Input type":
			a.inputType = c.Raw()
			a.has |= aInputType
		case "Concrete Inputs":
			a.concrete = c.Raw()
			a.has |= aConcrete
		default:
			c.Skip()
		}
		switch c.WS() {
		case ',':
			c.I++
		case '}':
			c.I++
			return
		default:
			c.Fail("',' or '}' in args")
		}
	}
}

// strOrSkip reads a string value, or skips a value of another type and
// returns nil.
func (c *cursor) strOrSkip() []byte {
	if c.WS() == '"' {
		return c.Str()
	}
	c.Skip()
	return nil
}

// triple reads [x, y, z]; anything else is skipped and reported false.
func (c *cursor) triple(dst *[3]int64) bool {
	if c.WS() != '[' {
		c.Skip()
		return false
	}
	c.I++
	n := 0
	for {
		if c.WS() == ']' {
			c.I++
			return n == 3
		}
		v := c.Int()
		if n < 3 {
			dst[n] = v
		}
		n++
		switch c.WS() {
		case ',':
			c.I++
		case ']':
		default:
			c.Fail("',' or ']' in a dimension list")
		}
	}
}

// parseCounterArgs reads the numeric series of a "C" event.
func (c *cursor) parseCounterArgs(e *event) {
	c.Expect('{', "'{'")
	if c.WS() == '}' {
		c.I++
		return
	}
	for {
		key := c.Str()
		c.Expect(':', "':' after a counter name")
		ch := c.WS()
		if (ch == '-' || (ch >= '0' && ch <= '9')) && e.nCounters < maxCounterSeries {
			e.counterNames[e.nCounters] = key
			e.counterVals[e.nCounters] = c.Float()
			e.nCounters++
		} else {
			c.Skip()
		}
		switch c.WS() {
		case ',':
			c.I++
		case '}':
			c.I++
			return
		default:
			c.Fail("',' or '}' in counter args")
		}
	}
}
