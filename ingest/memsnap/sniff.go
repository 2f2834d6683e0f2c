package memsnap

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
)

// Sniff says whether the first bytes of a file (head; gzip is inflated as
// far as they go) are a CUDA memory snapshot: a JSON object whose first
// top-level keys, as far as head holds them, include "segments" or
// "device_traces" (torch.cuda.memory._snapshot() writes segments first).
// A head that ends before either key shows is not taken for one.
func Sniff(head []byte) bool {
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(bytes.NewReader(head))
		if err != nil {
			return false
		}
		head, _ = io.ReadAll(zr) // a cut stream gives what it had
	}
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
