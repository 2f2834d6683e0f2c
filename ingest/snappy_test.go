package ingest

import (
	"bytes"
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/snappy"
)

// Staged files are compressed by the fast encoder, in a format any Snappy
// reader decodes.
func TestFastSnappy(t *testing.T) {
	c, err := compress.GetCodec(compress.Codecs.Snappy)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.(fastSnappy); !ok {
		t.Fatalf("the Snappy codec is %T, want fastSnappy", c)
	}
	src := bytes.Repeat([]byte("ampere_sm80_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x32_stage4_warpsize2x2x1_tensor16x8x16_kernel;"), 500)
	for _, enc := range [][]byte{c.Encode(nil, src), c.EncodeLevel(make([]byte, 0, 10), src, 1)} {
		if len(enc) >= len(src)/4 {
			t.Errorf("%d bytes compressed to %d", len(src), len(enc))
		}
		got, err := snappy.Decode(nil, enc)
		if err != nil || !bytes.Equal(got, src) {
			t.Errorf("decoded %d bytes (%v), want the %d written", len(got), err, len(src))
		}
		if got := c.Decode(nil, enc); !bytes.Equal(got, src) {
			t.Errorf("the codec decoded %d bytes, want %d", len(got), len(src))
		}
	}
}
