package kineto

import "bytes"

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
	c.expect('{', "an event object '{'")
	if c.ws() == '}' {
		c.i++
		return
	}
	argsAt := -1 // where args started, when they came before ph
	for {
		key := c.str()
		c.expect(':', "':' after an event key")
		switch string(key) {
		case "ph":
			v := c.str()
			if len(v) > 0 {
				e.ph = v[0]
			}
		case "name":
			e.name = c.str()
		case "cat":
			e.cat = c.str()
		case "ts":
			e.ts = c.micros()
			e.hasTS = true
		case "dur":
			e.dur = c.micros()
			e.hasDur = true
		case "pid":
			if c.ws() == '"' {
				e.pidStr = c.str()
				e.pid = parseIntOr(e.pidStr, -1)
			} else {
				e.pid = c.int()
			}
		case "tid":
			if c.ws() == '"' {
				e.tidStr = c.str()
				e.tid = parseIntOr(e.tidStr, -1)
			} else {
				e.tid = c.int()
			}
		case "id":
			if c.ws() == '"' {
				raw := c.str()
				e.id = parseIntOr(raw, 0)
			} else {
				e.id = c.int()
			}
			e.hasID = true
		case "bp":
			v := c.str()
			if len(v) > 0 {
				e.bp = v[0]
			}
		case "s":
			v := c.str()
			if len(v) > 0 {
				e.scope = v[0]
			}
		case "args":
			if e.ph == 0 && c.ws() == '{' {
				argsAt = c.i
			}
			if c.ws() == '{' && e.ph == 'C' {
				c.parseCounterArgs(e)
			} else {
				c.parseArgs(&e.args)
			}
		default:
			c.skip()
		}
		switch c.ws() {
		case ',':
			c.i++
		case '}':
			c.i++
			if argsAt >= 0 && e.ph == 'C' {
				// a counter's args came before its ph: read them again as series
				sub := cursor{b: c.b, i: argsAt}
				sub.parseCounterArgs(e)
			}
			return
		default:
			c.fail("',' or '}' in an event")
		}
	}
}

func parseIntOr(b []byte, def int64) int64 {
	if v, ok := parseInt(bytes.TrimSpace(b)); ok {
		return v
	}
	return def
}

func (c *cursor) parseArgs(a *eventArgs) {
	if c.ws() != '{' {
		c.skip()
		return
	}
	c.i++
	if c.ws() == '}' {
		c.i++
		return
	}
	for {
		key := c.str()
		c.expect(':', "':' after an args key")
		switch string(key) {
		case "correlation":
			a.correlation = c.int()
			a.has |= aCorrelation
		case "External id":
			a.externalID = c.int()
			a.has |= aExternalID
		case "device":
			a.device = c.int()
			a.has |= aDevice
		case "stream":
			a.stream = c.int()
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
			a.registers = c.int()
			a.has |= aRegisters
		case "shared memory":
			a.sharedMem = c.int()
			a.has |= aSharedMem
		case "est. achieved occupancy %":
			a.occupancy = c.float()
			a.has |= aOccupancy
		case "bytes":
			a.bytes = c.int()
			a.has |= aBytes
		case "Collective name":
			a.collName = c.strOrSkip()
			a.has |= aCollName
		case "dtype":
			a.dtype = c.strOrSkip()
			a.has |= aDtype
		case "In msg nelems":
			a.inElems = c.int()
			a.has |= aInElems
		case "Out msg nelems":
			a.outElems = c.int()
			a.has |= aOutElems
		case "Group size":
			a.groupSize = c.int()
			a.has |= aGroupSize
		case "Process Group Name":
			a.pgName = c.strOrSkip()
			a.has |= aPGName
		case "Process Group Description":
			a.pgDesc = c.strOrSkip()
			a.has |= aPGDesc
		case "Process Group Ranks":
			if c.ws() == '"' {
				a.pgRanks = c.str()
			} else {
				a.pgRanks = c.raw()
			}
			a.has |= aPGRanks
		case "Total Allocated":
			a.totalAllocated = c.int()
			a.has |= aTotalAllocated
		case "Total Reserved":
			a.totalReserved = c.int()
			a.has |= aTotalReserved
		case "Device Id":
			a.deviceID = c.int()
			a.has |= aDeviceID
		case "Device Type":
			a.deviceType = c.int()
			a.has |= aDeviceType
		case "name":
			a.name = c.strOrSkip()
			a.has |= aName
		default:
			c.skip()
		}
		switch c.ws() {
		case ',':
			c.i++
		case '}':
			c.i++
			return
		default:
			c.fail("',' or '}' in args")
		}
	}
}

// strOrSkip reads a string value, or skips a value of another type and
// returns nil.
func (c *cursor) strOrSkip() []byte {
	if c.ws() == '"' {
		return c.str()
	}
	c.skip()
	return nil
}

// triple reads [x, y, z]; anything else is skipped and reported false.
func (c *cursor) triple(dst *[3]int64) bool {
	if c.ws() != '[' {
		c.skip()
		return false
	}
	c.i++
	n := 0
	for {
		if c.ws() == ']' {
			c.i++
			return n == 3
		}
		v := c.int()
		if n < 3 {
			dst[n] = v
		}
		n++
		switch c.ws() {
		case ',':
			c.i++
		case ']':
		default:
			c.fail("',' or ']' in a dimension list")
		}
	}
}

// parseCounterArgs reads the numeric series of a "C" event.
func (c *cursor) parseCounterArgs(e *event) {
	c.expect('{', "'{'")
	if c.ws() == '}' {
		c.i++
		return
	}
	for {
		key := c.str()
		c.expect(':', "':' after a counter name")
		ch := c.ws()
		if (ch == '-' || (ch >= '0' && ch <= '9')) && e.nCounters < maxCounterSeries {
			e.counterNames[e.nCounters] = key
			e.counterVals[e.nCounters] = c.float()
			e.nCounters++
		} else {
			c.skip()
		}
		switch c.ws() {
		case ',':
			c.i++
		case '}':
			c.i++
			return
		default:
			c.fail("',' or '}' in counter args")
		}
	}
}
