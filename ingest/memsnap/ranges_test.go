package memsnap

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/ingest/jsonscan"
)

// A size below zero or beyond int64 (or beyond stream.MaxMemBytes) is a
// corrupt snapshot: the reader refuses it with the file and the offset of
// the value, in whatever pieces the file is read, rather than storing
// "-5 B allocated" or a wrapped or saturated number.
func TestSizesOutOfRange(t *testing.T) {
	for _, c := range []struct {
		name, old, new, what string
	}{
		{"negative block size", `"size": 512,`, `"size": -5,`, "block size -5"},
		{"block size 1e30", `"size": 512,`, `"size": 1e30,`, "block size 1e30"},
		{"block size above int64", `"size": 512,`, `"size": 99999999999999999999,`, "block size 99999999999999999999"},
		{"block size beyond float64", `"size": 512,`, `"size": 1e400,`, "block size 1e400"},
		{"block size above 1 PiB", `"size": 512,`, `"size": 1125899906842625,`, "block size 1125899906842625"},
		{"negative fraction", `"size": 512,`, `"size": -0.5,`, "block size -0.5"},
		{"hex string above int64", `"size": 512,`, `"size": "0x1FFFFFFFFFFFFFFFF",`, `block size "0x1FFFFFFFFFFFFFFFF"`},
		{"negative string", `"size": 512,`, `"size": "-5",`, `block size "-5"`},
		{"negative total_size", `"total_size": 2097152,`, `"total_size": -2097152,`, "segment total_size -2097152"},
		{"allocated_size 1e30", `"allocated_size": 1024,`, `"allocated_size": 1e30,`, "segment allocated_size 1e30"},
		{"negative requested_size", `"requested_size": 512,`, `"requested_size": -1,`, "block requested_size -1"},
		{"negative event size", `"size": 1024, "stream": 0, "time_us": 6`, `"size": -1024, "stream": 0, "time_us": 6`, "trace entry size -1024"},
		{"device_free above int64", `"device_free": 4096,`, `"device_free": 18446744073709551616,`, "trace entry device_free 18446744073709551616"},
		{"time_us that wraps in ns", `"time_us": 7}`, `"time_us": 1e30}`, "trace entry time_us 1e30 is not a time"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if strings.Count(small, c.old) != 1 {
				t.Fatalf("%q is not once in the snapshot", c.old)
			}
			doc := strings.Replace(small, c.old, c.new, 1)
			key := c.new[:strings.Index(c.new, ":")+1]
			at := strings.Index(doc, c.new) + len(key) + 1 // the value, after ": "
			want := fmt.Sprintf("s.json: byte %d: %s", at, c.what)
			for how, read := range map[string]func() (*Snapshot, error){
				"whole":          func() (*Snapshot, error) { return Read(strings.NewReader(doc), "s.json") },
				"a byte at once": func() (*Snapshot, error) { return Read(&oneByte{r: strings.NewReader(doc)}, "s.json") },
				"gzip":           func() (*Snapshot, error) { return Read(bytes.NewReader(gzipped(doc)), "s.json") },
			} {
				_, err := read()
				var fe *jsonscan.FileError
				if !errors.As(err, &fe) || fe.Path != "s.json" || fe.Offset != int64(at) || !strings.HasPrefix(err.Error(), want) ||
					!strings.Contains(err.Error(), "corrupt") {
					t.Errorf("%s: %v, want a FileError %q...", how, err, want)
				}
			}
		})
	}
}

// Sizes in range read as before: numbers, numbers in strings (decimal or
// hex), a fraction cut off, 0 and the largest size allowed.
func TestSizesInRange(t *testing.T) {
	for in, want := range map[string]int64{`512`: 512, `"512"`: 512, `"0x200"`: 512, `512.9`: 512, `5.12e2`: 512, `0`: 0, `-0`: 0, `1125899906842624`: 1 << 50, `"?"`: 0} {
		doc := strings.Replace(small, `"size": 512,`, `"size": `+in+`,`, 1)
		snap, err := Read(strings.NewReader(doc), "s.json")
		if err != nil {
			t.Errorf("size %s: %v", in, err)
			continue
		}
		if got := snap.Blocks.Size.V[1]; got != want {
			t.Errorf("size %s read as %d, want %d", in, got, want)
		}
	}
}

func gzipped(s string) []byte {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	w.Write([]byte(s))
	w.Close()
	return b.Bytes()
}
