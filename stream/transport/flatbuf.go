package transport

import (
	"encoding/binary"
	"fmt"
)

// A bounds-checking reader of FlatBuffers, for verifying Arrow IPC
// metadata before the Arrow library decodes it. The library trusts every
// length it reads: one flipped bit in a vector's length made it allocate
// 158 GB for a 2.4 KB message. Every accessor here checks that what it
// returns lies inside the buffer, so that once a message has been walked
// with it, each length the library will read is bounded by the message.

// fbuf is one FlatBuffer (an IPC message's metadata).
type fbuf []byte

func (b fbuf) has(pos, n int) bool { return pos >= 0 && n >= 0 && pos <= len(b) && n <= len(b)-pos }

func (b fbuf) u16(pos int) (int, error) {
	if !b.has(pos, 2) {
		return 0, fmt.Errorf("2 bytes at %d run past the %d-byte metadata", pos, len(b))
	}
	return int(binary.LittleEndian.Uint16(b[pos:])), nil
}

func (b fbuf) u32(pos int) (int, error) {
	if !b.has(pos, 4) {
		return 0, fmt.Errorf("4 bytes at %d run past the %d-byte metadata", pos, len(b))
	}
	return int(binary.LittleEndian.Uint32(b[pos:])), nil
}

// fbTable is a verified table: its vtable lies inside the buffer and
// declares a table that does too.
type fbTable struct {
	b      fbuf
	pos    int // the table's start
	vt     int // its vtable's start
	slots  int // fields the vtable has an entry for
	tbytes int // the table's size
}

// root is the table the buffer's first word points at.
func (b fbuf) root() (fbTable, error) {
	off, err := b.u32(0)
	if err != nil {
		return fbTable{}, err
	}
	return b.table(off)
}

// table verifies the table starting at pos.
func (b fbuf) table(pos int) (fbTable, error) {
	if !b.has(pos, 4) {
		return fbTable{}, fmt.Errorf("table at %d runs past the %d-byte metadata", pos, len(b))
	}
	vt := pos - int(int32(binary.LittleEndian.Uint32(b[pos:])))
	vtBytes, err := b.u16(vt)
	if err != nil {
		return fbTable{}, fmt.Errorf("table at %d: vtable: %w", pos, err)
	}
	tBytes, err := b.u16(vt + 2)
	if err != nil {
		return fbTable{}, fmt.Errorf("table at %d: vtable: %w", pos, err)
	}
	if vtBytes < 4 || vtBytes%2 != 0 || !b.has(vt, vtBytes) {
		return fbTable{}, fmt.Errorf("table at %d: vtable of %d bytes at %d is malformed", pos, vtBytes, vt)
	}
	if tBytes < 4 || !b.has(pos, tBytes) {
		return fbTable{}, fmt.Errorf("table at %d: %d bytes run past the %d-byte metadata", pos, tBytes, len(b))
	}
	return fbTable{b: b, pos: pos, vt: vt, slots: (vtBytes - 4) / 2, tbytes: tBytes}, nil
}

// field is where field slot's value starts and whether it is present; a
// present field of size bytes must lie inside its table.
func (t fbTable) field(slot, size int) (int, bool, error) {
	if slot >= t.slots {
		return 0, false, nil
	}
	off := int(binary.LittleEndian.Uint16(t.b[t.vt+4+2*slot:]))
	if off == 0 {
		return 0, false, nil
	}
	if off+size > t.tbytes {
		return 0, false, fmt.Errorf("field %d (%d bytes at +%d) runs past its %d-byte table at %d", slot, size, off, t.tbytes, t.pos)
	}
	return t.pos + off, true, nil
}

// scalar reads an integer field of size 1, 2, 4 or 8 bytes (def when absent).
func (t fbTable) scalar(slot, size int, def int64) (int64, error) {
	p, ok, err := t.field(slot, size)
	if err != nil || !ok {
		return def, err
	}
	switch size {
	case 1:
		return int64(int8(t.b[p])), nil
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(t.b[p:]))), nil
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(t.b[p:]))), nil
	}
	return int64(binary.LittleEndian.Uint64(t.b[p:])), nil
}

// ref follows an offset field to where it points.
func (t fbTable) ref(slot int) (int, bool, error) {
	p, ok, err := t.field(slot, 4)
	if err != nil || !ok {
		return 0, false, err
	}
	target := p + int(binary.LittleEndian.Uint32(t.b[p:]))
	if !t.b.has(target, 4) {
		return 0, false, fmt.Errorf("field %d of the table at %d points past the metadata (%d)", slot, t.pos, target)
	}
	return target, true, nil
}

// sub is the table field slot points at.
func (t fbTable) sub(slot int) (fbTable, bool, error) {
	target, ok, err := t.ref(slot)
	if err != nil || !ok {
		return fbTable{}, false, err
	}
	s, err := t.b.table(target)
	return s, err == nil, err
}

// vector is the start and length of the vector of elemSize-byte elements
// field slot points at; its elements lie inside the buffer.
func (t fbTable) vector(slot, elemSize int) (start, n int, err error) {
	target, ok, err := t.ref(slot)
	if err != nil || !ok {
		return 0, 0, err
	}
	return t.b.vectorAt(target, elemSize)
}

func (b fbuf) vectorAt(pos, elemSize int) (start, n int, err error) {
	n, err = b.u32(pos)
	if err != nil {
		return 0, 0, err
	}
	if n > (len(b)-pos-4)/elemSize {
		return 0, 0, fmt.Errorf("vector at %d claims %d elements of %d bytes, more than the %d-byte metadata holds", pos, n, elemSize, len(b))
	}
	return pos + 4, n, nil
}

// str is the string field slot points at ("" when absent).
func (t fbTable) str(slot int) (string, error) {
	start, n, err := t.vector(slot, 1)
	if err != nil {
		return "", err
	}
	return string(t.b[start : start+n]), nil
}

// tables is the vector of tables field slot points at, of at most max.
func (t fbTable) tables(slot, max int) ([]fbTable, error) {
	start, n, err := t.vector(slot, 4)
	if err != nil || n == 0 {
		return nil, err
	}
	if n > max {
		return nil, fmt.Errorf("%d entries, more than the %d allowed", n, max)
	}
	out := make([]fbTable, n)
	for i := range n {
		p := start + 4*i
		target := p + int(binary.LittleEndian.Uint32(t.b[p:]))
		if out[i], err = t.b.table(target); err != nil {
			return nil, fmt.Errorf("element %d: %w", i, err)
		}
	}
	return out, nil
}
