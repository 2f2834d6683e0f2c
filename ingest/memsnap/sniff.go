package memsnap

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/klauspost/compress/gzip"
)

// Sniff says whether the first bytes of a file (head; gzip is inflated as
// far as they go) are a CUDA memory snapshot: a JSON object whose first
// top-level keys, as far as head holds them, include "segments" or
// "device_traces" (torch.cuda.memory._snapshot() writes segments first).
// A head that ends before either key shows is not taken for one.
func Sniff(head []byte) bool {
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		buf := inflated.Get().(*bytes.Buffer)
		defer inflated.Put(buf)
		buf.Reset()
		if !inflate(buf, head) {
			return false
		}
		head = buf.Bytes() // a cut stream gives what it had
	}
	if !mayHoldKey(head) {
		return false
	}
	return sniffKeys(head)
}

// inflated and gzipReaders keep the buffers of earlier sniffs: a directory
// of 512 rank traces is sniffed file after file, and a fresh gzip reader
// and a growing buffer for each ~840 KB head cost more than the inflating.
var (
	inflated    = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	gzipReaders sync.Pool
)

// inflate appends what the gzip stream in head holds, as far as it goes,
// to buf; false when head has no valid gzip header.
func inflate(buf *bytes.Buffer, head []byte) bool {
	src := bytes.NewReader(head)
	zr, _ := gzipReaders.Get().(*gzip.Reader)
	var err error
	if zr == nil {
		zr, err = gzip.NewReader(src)
	} else {
		err = zr.Reset(src)
	}
	if err != nil {
		return false
	}
	buf.ReadFrom(zr)
	gzipReaders.Put(zr)
	return true
}

// mayHoldKey says whether head could hold a key that decodes to "segments"
// or "device_traces": one written out plainly, or one spelled with a \u
// escape (the only escape that yields a letter). Every other head is no
// snapshot, and Sniff answers without decoding it: a PyTorch trace's 64 KiB
// head holds neither, and decoding its top-level values with encoding/json
// cost ~10 ms of CPU a file (5.2 s of r512's 44 s analyze profile).
func mayHoldKey(head []byte) bool {
	return bytes.Contains(head, []byte("segments")) || bytes.Contains(head, []byte("device_traces")) ||
		bytes.Contains(head, []byte(`\u`))
}

// sniffKeys walks head's top-level keys with encoding/json.
func sniffKeys(head []byte) bool {
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return false
		}
		if key, _ := tok.(string); key == "segments" || key == "device_traces" {
			return true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return false
		}
	}
	return false
}
