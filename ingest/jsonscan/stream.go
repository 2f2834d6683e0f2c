package jsonscan

import (
	"bytes"
	"fmt"
	"io"
	"sync"
)

// Stream feeds a Cursor from a reader, one unit at a time, through a window
// that grows to fit the largest unit.
type Stream struct {
	r    io.Reader
	buf  []byte
	end  int   // valid bytes in buf
	pos  int   // committed position in buf
	base int64 // stream offset of buf[0]
	eof  bool
	// ReadErr is the error that ended the input early, if any.
	ReadErr error
}

// MaxUnitBytes bounds one unit (one trace event, one top-level value): the
// window grows to hold the largest, so this bounds the reader's memory.
// A variable so that tests can lower it.
var MaxUnitBytes = 512 << 20

// Error is bad input at a stream offset.
type Error struct {
	Offset    int64
	Msg       string
	Truncated bool // the input ended inside the document
}

func (e *Error) Error() string { return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg) }

// NewStream reads r through a window of the given initial size; a window
// of PooledWindow bytes comes from the pool Release fills.
func NewStream(r io.Reader, window int) *Stream {
	if window == PooledWindow {
		if b, ok := windows.Get().(*[]byte); ok {
			// an old window's bytes are never read: a cursor sees
			// buf[:end], what this stream has read
			return &Stream{r: r, buf: *b}
		}
	}
	return &Stream{r: r, buf: make([]byte, max(window, 1))}
}

// PooledWindow is the window size whose windows are kept for reuse.
const PooledWindow = 1 << 20

// windows holds the PooledWindow windows of released streams: a reader of
// 512 small traces allocated one per file (0.5 GB in all on r512).
var windows sync.Pool

// Release hands the window back for another stream to reuse. The caller
// must be done with s and with every slice its units took of the window
// (an event's name, a raw value): the next stream overwrites them. A
// window grown past PooledWindow is left to the collector, so that the
// pool never holds a big trace's largest unit.
func (s *Stream) Release() {
	if len(s.buf) == PooledWindow {
		b := s.buf
		windows.Put(&b)
	}
	s.buf, s.end, s.pos = nil, 0, 0
}

// Offset is the stream offset of the committed position.
func (s *Stream) Offset() int64 { return s.base + int64(s.pos) }

// Run calls unit with a cursor at the committed position until it reports
// done, then checks that only whitespace follows. A unit that runs out of
// window is parsed again after a refill, so it must not change its
// caller's state before it has read all it needs; one that finds bad syntax
// ends Run with an *Error, and a unit may also end it by panicking with an
// error value of its own, which Run returns.
func (s *Stream) Run(unit func(c *Cursor) (done bool)) error {
	for {
		done, err := s.chunk(unit)
		if err != nil {
			return err
		}
		if done {
			return s.trailing()
		}
		if s.pos == 0 && s.end == len(s.buf) && len(s.buf) >= MaxUnitBytes {
			// one unit fills the largest window: refuse it rather than
			// grow without bound on what a file claims
			return &Error{Offset: s.base, Msg: fmt.Sprintf("a single JSON value (an event, or a top-level value) longer than %d MiB; trainscope reads at most that", MaxUnitBytes>>20)}
		}
		more, rerr := s.refill()
		if rerr != nil {
			s.ReadErr = rerr
		}
		if !more {
			return s.truncated()
		}
	}
}

func (s *Stream) chunk(unit func(c *Cursor) bool) (done bool, err error) {
	c := Cursor{B: s.buf[:s.end], I: s.pos}
	defer func() {
		if r := recover(); r != nil {
			switch v := r.(type) {
			case Short:
				done, err = false, nil
			case *SyntaxError:
				err = &Error{Offset: s.base + int64(v.At), Msg: "expected " + v.Want + s.found(v.At)}
			case error:
				// a unit's own verdict on the input (wrong kind of file, ...)
				err = v
			default:
				panic(r)
			}
		}
	}()
	for {
		d := unit(&c)
		s.pos = c.I
		if d {
			return true, nil
		}
	}
}

func (s *Stream) found(at int) string {
	if at >= s.end {
		return ""
	}
	return fmt.Sprintf(", found %q", s.buf[at:min(at+16, s.end)])
}

// refill keeps the uncommitted bytes, moves them to the front and reads
// more; it reports false when no more bytes can come.
func (s *Stream) refill() (bool, error) {
	if s.eof {
		return false, nil
	}
	if s.pos > 0 {
		copy(s.buf, s.buf[s.pos:s.end])
		s.end -= s.pos
		s.base += int64(s.pos)
		s.pos = 0
	}
	if s.end == len(s.buf) {
		nb := make([]byte, 2*len(s.buf))
		copy(nb, s.buf[:s.end])
		s.buf = nb
	}
	for s.end < len(s.buf) {
		n, err := s.r.Read(s.buf[s.end:])
		s.end += n
		if err == io.EOF {
			s.eof = true
			break
		}
		if err != nil {
			s.eof = true
			return n > 0, err
		}
		if n == 0 {
			break
		}
	}
	return true, nil
}

func (s *Stream) truncated() error {
	if s.ReadErr != nil {
		return &Error{Offset: s.base + int64(s.end), Msg: "read error: " + s.ReadErr.Error(), Truncated: true}
	}
	if s.base == 0 && len(bytes.TrimSpace(s.buf[:s.end])) == 0 {
		return &Error{Offset: 0, Msg: "empty file", Truncated: true}
	}
	return &Error{Offset: s.base + int64(s.end), Msg: "unexpected end of file", Truncated: true}
}

func (s *Stream) trailing() error {
	for {
		for ; s.pos < s.end; s.pos++ {
			switch s.buf[s.pos] {
			case ' ', '\n', '\r', '\t', 0:
			default:
				return &Error{Offset: s.Offset(), Msg: "unexpected data after the end of the JSON document"}
			}
		}
		more, err := s.refill()
		if err != nil {
			s.ReadErr = err
			return &Error{Offset: s.Offset(), Msg: "read error: " + err.Error()}
		}
		if !more {
			return nil
		}
	}
}

// At is the stream offset of index i of the window a unit's cursor sees.
func (s *Stream) At(i int) int64 { return s.base + int64(i) }

// Consumed is how many bytes have been read from the reader so far.
func (s *Stream) Consumed() int64 { return s.base + int64(s.end) }
