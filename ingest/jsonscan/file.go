package jsonscan

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/klauspost/compress/gzip"
)

// FileError is bad input: it names the file, the byte offset in the
// (decompressed) JSON and what was expected there.
type FileError struct {
	Path       string
	Offset     int64
	Compressed bool // Offset counts bytes of the gzip stream, not of the JSON
	Msg        string
	// Truncated: the input ended early (an empty file, a JSON document or
	// gzip stream cut short), as a file still being written does.
	Truncated bool
}

// IsTruncated says whether err is a FileError for input that ended early.
func IsTruncated(err error) bool {
	var fe *FileError
	return errors.As(err, &fe) && fe.Truncated
}

func (e *FileError) Error() string {
	unit := "byte"
	if e.Compressed {
		unit = "compressed byte"
	}
	return fmt.Sprintf("%s: %s %d: %s", e.Path, unit, e.Offset, e.Msg)
}

// PickleHelp says how to get JSON instead of a pickle.
const PickleHelp = `a pickle is never deserialized (it can run code); re-export it as JSON in your own environment:
    import json, torch
    snapshot = torch.cuda.memory._snapshot()
    json.dump(snapshot, open("snapshot.json", "w"))`

// Input is a file opened for scanning.
type Input struct {
	R          io.Reader       // the JSON bytes
	Gzip       *gzip.Reader    // non-nil when the file is gzip
	Compressed *CountingReader // counts compressed bytes read, when gzip
}

// Open sniffs r: it refuses empty input and pickles (by name or by their
// protocol bytes, without reading further) and inflates gzip. what names
// the expected content in errors ("a PyTorch profiler trace").
func Open(r io.Reader, name, what string) (*Input, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	head, _ := br.Peek(4)
	if len(head) == 0 {
		return nil, &FileError{Path: name, Msg: "empty file: expected " + what}
	}
	if IsPickle(head, name) {
		return nil, &FileError{Path: name, Msg: "this is a Python pickle, not JSON; " + PickleHelp}
	}
	in := &Input{R: br}
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		in.Compressed = &CountingReader{R: br}
		zr, err := gzip.NewReader(in.Compressed)
		if err != nil {
			return nil, &FileError{Path: name, Offset: in.Compressed.N, Compressed: true, Msg: "bad gzip header: " + err.Error()}
		}
		zr.Multistream(true)
		in.Gzip = zr
		// a gzipped pickle: look at what the gzip holds, too
		zb := bufio.NewReaderSize(zr, 64<<10)
		if inner, _ := zb.Peek(4); IsPickle(inner, "") {
			return nil, &FileError{Path: name, Msg: "this is a gzipped Python pickle, not JSON; " + PickleHelp}
		}
		in.R = zb
	}
	return in, nil
}

// IsPickle reports whether a file is a Python pickle, by its name or by
// the protocol 2-5 header bytes.
func IsPickle(head []byte, name string) bool {
	low := strings.TrimSuffix(strings.ToLower(name), ".gz")
	if strings.HasSuffix(low, ".pickle") || strings.HasSuffix(low, ".pkl") {
		return true
	}
	return len(head) >= 2 && head[0] == 0x80 && head[1] >= 2 && head[1] <= 5
}

// CountingReader counts the bytes read through it.
type CountingReader struct {
	R io.Reader
	N int64
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	return n, err
}

// JSONSize guesses the JSON size of a file, to size a reader's tables
// ahead: its size, or for gzip the uncompressed size its trailer records,
// but never more than maxGzipRatio times the file. The trailer is a claim
// (modulo 4 GiB, and anything at all in a damaged or hostile file): a
// 38-byte file once had its reader reserve 761 MB from it.
func JSONSize(f *os.File, size int64) int64 {
	var head [2]byte
	if _, err := f.ReadAt(head[:], 0); err != nil || head[0] != 0x1f || head[1] != 0x8b || size < 18 {
		return size
	}
	limit := size * maxGzipRatio
	var tail [4]byte
	if _, err := f.ReadAt(tail[:], size-4); err != nil {
		return size
	}
	n := int64(binary.LittleEndian.Uint32(tail[:]))
	if n < size {
		// past 4 GiB the trailer wraps; the true size is unknown
		return limit
	}
	return min(n, limit)
}

// JSONSizeAtLeast is JSONSize's n for a file of size bytes, for deciding
// whether the file is big: a gzip trailer that makes the JSON less than
// minGzipRatio times the compressed bytes is taken to have wrapped past
// 4 GiB (a 5 GB trace in 400 MB of gzip says 0.7 GB), and minGzipRatio
// times them is assumed instead.
func JSONSizeAtLeast(n, size int64) int64 {
	if n != size && n < size*minGzipRatio { // gzip: JSONSize gives a plain file's own size
		return size * minGzipRatio
	}
	return n
}

// minGzipRatio is the least a trace's JSON is taken to be over its gzip
// file, for JSONSizeAtLeast.
const minGzipRatio = 4

// maxGzipRatio bounds how much larger than its gzip file a trace's JSON is
// taken to be (profiler traces compress 8-20x).
const maxGzipRatio = 32
