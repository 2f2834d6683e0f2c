package ingest

import (
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/s2"
)

// fastSnappy is arrow-go's Snappy codec with klauspost's fast Snappy
// encoder in place of its "better" one, which arrow-go's codec calls
// (klauspost/compress/snappy.Encode): the same format, any Snappy reader
// (DuckDB's) reads it, a little larger, written in about half the time.
// Staged files are written once and read a few times, on the same
// machine, soon.
type fastSnappy struct{ compress.Codec }

func (fastSnappy) Encode(dst, src []byte) []byte { return s2.EncodeSnappy(dst, src) }

func (fastSnappy) EncodeLevel(dst, src []byte, _ int) []byte { return s2.EncodeSnappy(dst, src) }

func init() {
	c, err := compress.GetCodec(compress.Codecs.Snappy)
	if err != nil {
		panic(err) // arrow-go registers it in its own init
	}
	compress.RegisterCodec(compress.Codecs.Snappy, fastSnappy{c})
}
