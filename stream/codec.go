package stream

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Wire format: one Arrow IPC stream per message (the schema, dictionary
// batches, one record batch), with the table name and SchemaVersion in the
// schema's metadata so that a receiver can refuse what it cannot read.

const (
	metaTable   = "trainscope.table"
	metaVersion = "trainscope.schema_version"
)

// ErrPoison marks a message that can never be decoded (corrupt bytes, an
// unknown schema version): a consumer terminates it instead of retrying.
var ErrPoison = errors.New("undecodable batch")

// Encode writes rec as one IPC stream labelled with its table.
func Encode(table string, rec arrow.RecordBatch) ([]byte, error) {
	md := rec.Schema().Metadata()
	keys := append(md.Keys(), metaTable, metaVersion)
	vals := append(md.Values(), table, strconv.Itoa(SchemaVersion))
	schema := arrow.NewSchema(rec.Schema().Fields(), func() *arrow.Metadata { m := arrow.NewMetadata(keys, vals); return &m }())
	labelled := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
	defer labelled.Release()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Write(labelled); err != nil {
		return nil, fmt.Errorf("encode %s: %w", table, err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("encode %s: %w", table, err)
	}
	return buf.Bytes(), nil
}

// Decode reads a message written by Encode. Errors wrap ErrPoison: bytes
// that do not decode, or a schema version this build cannot read, will
// never decode on a retry.
func Decode(b []byte) (table string, rec arrow.RecordBatch, err error) {
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(memory.DefaultAllocator))
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrPoison, err)
	}
	defer r.Release()
	md := r.Schema().Metadata()
	v := md.FindKey(metaVersion)
	if v < 0 || md.Values()[v] != strconv.Itoa(SchemaVersion) {
		got := "none"
		if v >= 0 {
			got = md.Values()[v]
		}
		return "", nil, fmt.Errorf("%w: schema version %s, this build reads %d", ErrPoison, got, SchemaVersion)
	}
	if t := md.FindKey(metaTable); t >= 0 {
		table = md.Values()[t]
	}
	if !r.Next() {
		if err := r.Err(); err != nil {
			return "", nil, fmt.Errorf("%w: %v", ErrPoison, err)
		}
		return "", nil, fmt.Errorf("%w: no record batch", ErrPoison)
	}
	rec = r.RecordBatch()
	rec.Retain()
	if r.Next() {
		rec.Release()
		return "", nil, fmt.Errorf("%w: more than one record batch", ErrPoison)
	}
	return table, rec, nil
}
