package transport

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Limits of one wire message, enforced before the Arrow library reads it.
const (
	// MaxMessageBytes is the largest message a consumer decodes: NATS'
	// own ceiling for a payload. Publishers aim at 64 KiB to 1 MiB.
	MaxMessageBytes = 64 << 20
	maxColumns      = 256 // fields of a schema (our widest table has 43)
	maxNesting      = 4   // list of list of ...
	maxKeyValues    = 64  // custom metadata pairs
)

// IPC metadata versions and the union tags this build sends (Arrow's
// Message.fbs and Schema.fbs).
const (
	metadataV4, metadataV5 = 3, 4

	headerSchema          = 1
	headerDictionaryBatch = 2
	headerRecordBatch     = 3

	typeInt           = 2
	typeFloatingPoint = 3
	typeUtf8          = 5
	typeBool          = 6
	typeList          = 12
)

// layout is what a column's buffers must hold, from its schema field.
type layout struct {
	name     string
	kind     byte // 'i' integer, 'f' float, 'b' bool, 's' utf8, 'l' list
	width    int  // bytes per value of 'i' and 'f' (and of a dictionary's indices)
	dict     bool // dictionary-encoded: the record batch holds indices
	dictID   int64
	value    *layout // a dictionary's value column
	children []layout
}

// CheckMessage verifies the framing and metadata of one wire message (an
// Arrow IPC stream: a schema, dictionary batches, one record batch) without
// trusting any length in it: every FlatBuffer offset, vector and string
// lies inside its message, every buffer inside its body, and each
// column's buffers are large enough for the rows its nodes claim. After
// it passes, decoding cannot allocate more than a small multiple of the
// message. Only the column types this build sends are accepted, without
// compression or dictionary deltas. Errors wrap ErrPoison.
func CheckMessage(b []byte) error {
	if err := checkMessage(b); err != nil {
		return fmt.Errorf("%w: %v", ErrPoison, err)
	}
	return nil
}

func checkMessage(b []byte) error {
	if len(b) > MaxMessageBytes {
		return fmt.Errorf("%d bytes, more than the %d a message may have", len(b), MaxMessageBytes)
	}
	pos := 0
	var cols []layout
	dicts := map[int64]*layout{}
	seen := map[int64]bool{}
	for i := 0; ; i++ {
		at := pos
		hdr, meta, body, next, err := nextMessage(b, pos)
		if err != nil {
			return fmt.Errorf("message %d at byte %d: %w", i, at, err)
		}
		pos = next
		if meta == nil { // end of stream
			if pos != len(b) {
				return fmt.Errorf("%d bytes after the end-of-stream marker at byte %d", len(b)-pos, at)
			}
			return errors.New("no record batch")
		}
		switch {
		case i == 0:
			if hdr.kind != headerSchema {
				return fmt.Errorf("message 0 is a %s, want the schema", headerName(hdr.kind))
			}
			if cols, err = checkSchema(hdr.table); err != nil {
				return fmt.Errorf("schema: %w", err)
			}
			collectDicts(cols, dicts)
		case hdr.kind == headerDictionaryBatch:
			id, err := hdr.table.scalar(0, 8, 0)
			if err != nil {
				return fmt.Errorf("dictionary batch at byte %d: %w", at, err)
			}
			d := dicts[id]
			if d == nil || seen[id] {
				return fmt.Errorf("dictionary batch at byte %d: id %d is not a dictionary of the schema, or comes twice", at, id)
			}
			seen[id] = true
			if delta, err := hdr.table.scalar(2, 1, 0); err != nil || delta != 0 {
				return fmt.Errorf("dictionary batch at byte %d: a delta (or unreadable: %v)", at, err)
			}
			data, ok, err := hdr.table.sub(1)
			if err != nil || !ok {
				return fmt.Errorf("dictionary batch at byte %d: no record batch (%v)", at, err)
			}
			if err := checkRecordBatch(data, []layout{*d.value}, len(body)); err != nil {
				return fmt.Errorf("dictionary %d at byte %d: %w", id, at, err)
			}
		case hdr.kind == headerRecordBatch:
			if len(seen) != len(dicts) {
				return fmt.Errorf("record batch at byte %d before %d of the schema's %d dictionaries", at, len(dicts)-len(seen), len(dicts))
			}
			if err := checkRecordBatch(hdr.table, cols, len(body)); err != nil {
				return fmt.Errorf("record batch at byte %d: %w", at, err)
			}
			return checkEnd(b, pos)
		default:
			return fmt.Errorf("message %d at byte %d is a %s, want a dictionary or record batch", i, at, headerName(hdr.kind))
		}
	}
}

// checkEnd accepts nothing after the record batch but an end-of-stream marker.
func checkEnd(b []byte, pos int) error {
	rest := b[pos:]
	if len(rest) == 0 || len(rest) == 8 && binary.LittleEndian.Uint32(rest) == 0xFFFFFFFF && binary.LittleEndian.Uint32(rest[4:]) == 0 {
		return nil
	}
	return fmt.Errorf("%d bytes after the record batch", len(rest))
}

func headerName(kind int64) string {
	switch kind {
	case headerSchema:
		return "schema"
	case headerDictionaryBatch:
		return "dictionary batch"
	case headerRecordBatch:
		return "record batch"
	}
	return fmt.Sprintf("message of type %d", kind)
}

type msgHeader struct {
	kind  int64
	table fbTable
}

// nextMessage reads the message framed at pos: the continuation marker,
// the metadata length, the metadata (a Message table) and the body. meta is
// nil at an end-of-stream marker.
func nextMessage(b []byte, pos int) (hdr msgHeader, meta fbuf, body []byte, next int, err error) {
	if len(b)-pos < 8 {
		return hdr, nil, nil, 0, fmt.Errorf("%d bytes, too few for a message prefix", len(b)-pos)
	}
	if binary.LittleEndian.Uint32(b[pos:]) != 0xFFFFFFFF {
		return hdr, nil, nil, 0, errors.New("no continuation marker")
	}
	n := int(int32(binary.LittleEndian.Uint32(b[pos+4:])))
	pos += 8
	if n == 0 {
		return hdr, nil, nil, pos, nil
	}
	if n < 8 || n > len(b)-pos {
		return hdr, nil, nil, 0, fmt.Errorf("metadata of %d bytes, but %d are left", n, len(b)-pos)
	}
	meta = fbuf(b[pos : pos+n])
	pos += n
	m, err := meta.root()
	if err != nil {
		return hdr, nil, nil, 0, fmt.Errorf("metadata: %w", err)
	}
	version, err := m.scalar(0, 2, 0)
	if err != nil {
		return hdr, nil, nil, 0, err
	}
	if version != metadataV4 && version != metadataV5 {
		return hdr, nil, nil, 0, fmt.Errorf("IPC metadata version %d, want V4 or V5", version+1)
	}
	kind, err := m.scalar(1, 1, 0)
	if err != nil {
		return hdr, nil, nil, 0, err
	}
	hdr.kind = kind & 0xff
	var ok bool
	if hdr.table, ok, err = m.sub(2); err != nil || !ok {
		return hdr, nil, nil, 0, fmt.Errorf("no message header (%v)", err)
	}
	bodyLen, err := m.scalar(3, 8, 0)
	if err != nil {
		return hdr, nil, nil, 0, err
	}
	if bodyLen < 0 || bodyLen > int64(len(b)-pos) {
		return hdr, nil, nil, 0, fmt.Errorf("body of %d bytes, but %d are left", bodyLen, len(b)-pos)
	}
	if err := checkKeyValues(m, 4); err != nil {
		return hdr, nil, nil, 0, fmt.Errorf("message metadata: %w", err)
	}
	body = b[pos : pos+int(bodyLen)]
	return hdr, meta, body, pos + int(bodyLen), nil
}

func checkKeyValues(t fbTable, slot int) error {
	kvs, err := t.tables(slot, maxKeyValues)
	if err != nil {
		return err
	}
	for _, kv := range kvs {
		if _, err := kv.str(0); err != nil {
			return err
		}
		if _, err := kv.str(1); err != nil {
			return err
		}
	}
	return nil
}

func checkSchema(s fbTable) ([]layout, error) {
	if end, err := s.scalar(0, 2, 0); err != nil || end != 0 {
		return nil, fmt.Errorf("not little-endian (or unreadable: %v)", err)
	}
	if err := checkKeyValues(s, 2); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	if _, _, err := s.vector(3, 8); err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	fields, err := s.tables(1, maxColumns)
	if err != nil {
		return nil, fmt.Errorf("fields: %w", err)
	}
	if len(fields) == 0 {
		return nil, errors.New("no columns")
	}
	out := make([]layout, len(fields))
	for i, f := range fields {
		if out[i], err = checkField(f, 0); err != nil {
			return nil, fmt.Errorf("column %d: %w", i, err)
		}
	}
	return out, nil
}

func checkField(f fbTable, depth int) (layout, error) {
	var l layout
	if depth > maxNesting {
		return l, fmt.Errorf("nested deeper than %d", maxNesting)
	}
	var err error
	if l.name, err = f.str(0); err != nil {
		return l, fmt.Errorf("name: %w", err)
	}
	if err := checkKeyValues(f, 6); err != nil {
		return l, fmt.Errorf("%s: metadata: %w", l.name, err)
	}
	children, err := f.tables(5, 1)
	if err != nil {
		return l, fmt.Errorf("%s: children: %w", l.name, err)
	}
	tag, err := f.scalar(2, 1, 0)
	if err != nil {
		return l, err
	}
	typ, ok, err := f.sub(3)
	if err != nil || !ok {
		return l, fmt.Errorf("%s: no type (%v)", l.name, err)
	}
	switch tag & 0xff {
	case typeInt:
		if l.width, err = intWidth(typ); err != nil {
			return l, fmt.Errorf("%s: %w", l.name, err)
		}
		l.kind = 'i'
	case typeFloatingPoint:
		p, err := typ.scalar(0, 2, 0)
		if err != nil || p < 0 || p > 2 {
			return l, fmt.Errorf("%s: floating point precision %d (%v)", l.name, p, err)
		}
		l.kind, l.width = 'f', 2<<p
	case typeUtf8:
		l.kind = 's'
	case typeBool:
		l.kind = 'b'
	case typeList:
		if len(children) != 1 {
			return l, fmt.Errorf("%s: a list with %d child fields", l.name, len(children))
		}
		child, err := checkField(children[0], depth+1)
		if err != nil {
			return l, fmt.Errorf("%s: %w", l.name, err)
		}
		l.kind, l.children = 'l', []layout{child}
	default:
		return l, fmt.Errorf("%s: Arrow type %d is not one trainscope sends", l.name, tag&0xff)
	}
	if l.kind != 'l' && len(children) > 0 {
		return l, fmt.Errorf("%s: a %c column with child fields", l.name, l.kind)
	}
	enc, ok, err := f.sub(4)
	if err != nil {
		return l, fmt.Errorf("%s: dictionary: %w", l.name, err)
	}
	if !ok {
		return l, nil
	}
	if l.kind != 's' {
		return l, fmt.Errorf("%s: a dictionary of %c values; only strings are dictionary-encoded", l.name, l.kind)
	}
	value := l
	l = layout{name: value.name, kind: 'i', dict: true, value: &value}
	if l.dictID, err = enc.scalar(0, 8, 0); err != nil {
		return l, err
	}
	idx, ok, err := enc.sub(1)
	if err != nil || !ok {
		return l, fmt.Errorf("%s: dictionary without an index type (%v)", l.name, err)
	}
	if l.width, err = intWidth(idx); err != nil {
		return l, fmt.Errorf("%s: dictionary index: %w", l.name, err)
	}
	if kind, err := enc.scalar(3, 2, 0); err != nil || kind != 0 {
		return l, fmt.Errorf("%s: dictionary kind %d (%v)", l.name, kind, err)
	}
	return l, nil
}

func intWidth(t fbTable) (int, error) {
	bits, err := t.scalar(0, 4, 0)
	if err != nil {
		return 0, err
	}
	switch bits {
	case 8, 16, 32, 64:
		return int(bits / 8), nil
	}
	return 0, fmt.Errorf("an integer of %d bits", bits)
}

func collectDicts(cols []layout, into map[int64]*layout) {
	for i := range cols {
		if cols[i].dict {
			into[cols[i].dictID] = &cols[i]
		}
		collectDicts(cols[i].children, into)
	}
}

// checkRecordBatch verifies a record batch's nodes and buffers against the
// columns they hold and the body they point into.
func checkRecordBatch(rb fbTable, cols []layout, bodyLen int) error {
	length, err := rb.scalar(0, 8, 0)
	if err != nil {
		return err
	}
	if length < 0 {
		return fmt.Errorf("%d rows", length)
	}
	if _, ok, err := rb.field(3, 4); err != nil || ok {
		return fmt.Errorf("compressed buffers (or unreadable: %v); trainscope sends none", err)
	}
	if _, n, err := rb.vector(4, 8); err != nil || n != 0 {
		return fmt.Errorf("variadic buffer counts (or unreadable: %v); trainscope sends none", err)
	}
	w := batchWalk{b: rb.b, bodyLen: int64(bodyLen)}
	if w.nodes, w.nNodes, err = rb.vector(1, 16); err != nil {
		return fmt.Errorf("nodes: %w", err)
	}
	if w.bufs, w.nBufs, err = rb.vector(2, 16); err != nil {
		return fmt.Errorf("buffers: %w", err)
	}
	for _, c := range cols {
		n, err := w.column(c, 0)
		if err != nil {
			return err
		}
		if n != length {
			return fmt.Errorf("column %s has %d rows, the batch %d", c.name, n, length)
		}
	}
	if w.iNode != w.nNodes || w.iBuf != w.nBufs {
		return fmt.Errorf("%d nodes and %d buffers, the columns use %d and %d", w.nNodes, w.nBufs, w.iNode, w.iBuf)
	}
	return nil
}

// batchWalk consumes a record batch's nodes and buffers in the order the
// Arrow reader does.
type batchWalk struct {
	b             fbuf
	bodyLen       int64
	nodes, bufs   int // vector starts
	nNodes, nBufs int
	iNode, iBuf   int
}

func (w *batchWalk) node() (length, nulls int64, err error) {
	if w.iNode >= w.nNodes {
		return 0, 0, fmt.Errorf("only %d nodes", w.nNodes)
	}
	p := w.nodes + 16*w.iNode
	w.iNode++
	length = int64(binary.LittleEndian.Uint64(w.b[p:]))
	nulls = int64(binary.LittleEndian.Uint64(w.b[p+8:]))
	if length < 0 || nulls < 0 || nulls > length {
		return 0, 0, fmt.Errorf("a node of %d rows with %d nulls", length, nulls)
	}
	return length, nulls, nil
}

// buffer consumes the next buffer and returns its length once it is known
// to lie inside the body.
func (w *batchWalk) buffer() (int64, error) {
	if w.iBuf >= w.nBufs {
		return 0, fmt.Errorf("only %d buffers", w.nBufs)
	}
	p := w.bufs + 16*w.iBuf
	w.iBuf++
	off := int64(binary.LittleEndian.Uint64(w.b[p:]))
	n := int64(binary.LittleEndian.Uint64(w.b[p+8:]))
	if off < 0 || n < 0 || off > w.bodyLen || n > w.bodyLen-off {
		return 0, fmt.Errorf("buffer %d (%d bytes at %d) lies outside the %d-byte body", w.iBuf-1, n, off, w.bodyLen)
	}
	return n, nil
}

// column checks one column's node and buffers and returns its row count.
func (w *batchWalk) column(c layout, depth int) (int64, error) {
	length, nulls, err := w.node()
	if err != nil {
		return 0, fmt.Errorf("column %s: %w", c.name, err)
	}
	validity, err := w.buffer()
	if err != nil {
		return 0, fmt.Errorf("column %s: %w", c.name, err)
	}
	if nulls > 0 && validity < (length+7)/8 {
		return 0, fmt.Errorf("column %s: %d validity bytes for %d rows", c.name, validity, length)
	}
	short := func(what string, have, per int64, extra int64) error {
		if length == 0 {
			return nil
		}
		if per > 0 && length > (have/per)-extra {
			return fmt.Errorf("column %s: %d %s bytes for %d rows", c.name, have, what, length)
		}
		return nil
	}
	data, err := w.buffer()
	if err != nil {
		return 0, fmt.Errorf("column %s: %w", c.name, err)
	}
	switch c.kind {
	case 'i', 'f':
		err = short("value", data, int64(c.width), 0)
	case 'b':
		if length > 0 && data < (length+7)/8 {
			err = fmt.Errorf("column %s: %d value bytes for %d booleans", c.name, data, length)
		}
	case 's':
		if err = short("offset", data, 4, 1); err == nil {
			_, err = w.buffer() // the characters: offsets are checked once decoded
		}
	case 'l':
		if err = short("offset", data, 4, 1); err == nil {
			_, err = w.column(c.children[0], depth+1)
		}
	}
	if err != nil {
		return 0, err
	}
	return length, nil
}
