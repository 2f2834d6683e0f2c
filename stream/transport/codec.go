package transport

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/trainscope/trainscope/stream"
)

// Wire format: one Arrow IPC stream per message (the schema, dictionary
// batches, one record batch), with the table name and stream.SchemaVersion in the
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
	var buf bytes.Buffer
	if err := encodeTo(&buf, table, rec); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// encodeTo is Encode, appending to buf.
func encodeTo(buf *bytes.Buffer, table string, rec arrow.RecordBatch) error {
	md := rec.Schema().Metadata()
	keys := append(md.Keys(), metaTable, metaVersion)
	vals := append(md.Values(), table, strconv.Itoa(stream.SchemaVersion))
	schema := arrow.NewSchema(rec.Schema().Fields(), func() *arrow.Metadata { m := arrow.NewMetadata(keys, vals); return &m }())
	labelled := array.NewRecordBatch(schema, rec.Columns(), rec.NumRows())
	defer labelled.Release()
	w := ipc.NewWriter(buf, ipc.WithSchema(schema), ipc.WithAllocator(memory.DefaultAllocator))
	if err := w.Write(labelled); err != nil {
		return fmt.Errorf("encode %s: %w", table, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("encode %s: %w", table, err)
	}
	return nil
}

// Decode reads a message written by Encode. The message is verified
// before the Arrow library reads it (CheckMessage: nothing in it can make
// decoding allocate more than a small multiple of its size) and the batch
// after (CheckBatch: the table's columns, sane offsets, text and values).
// Errors wrap ErrPoison: bytes that fail will fail on every retry.
func Decode(b []byte) (table string, rec arrow.RecordBatch, err error) {
	if err := CheckMessage(b); err != nil {
		return "", nil, err
	}
	table, rec, err = decode(b)
	if err != nil {
		return "", nil, fmt.Errorf("%w: %v", ErrPoison, err)
	}
	if err := CheckBatch(table, rec); err != nil {
		rec.Release()
		return "", nil, fmt.Errorf("%w: %v", ErrPoison, err)
	}
	return table, rec, nil
}

func decode(b []byte) (table string, rec arrow.RecordBatch, err error) {
	defer func() {
		// CheckMessage leaves the library nothing to trip on that we know
		// of; a panic in it is still a bad message, not a dead server.
		if p := recover(); p != nil {
			if rec != nil {
				rec.Release()
			}
			table, rec, err = "", nil, fmt.Errorf("arrow: %v", p)
		}
	}()
	r, err := ipc.NewReader(bytes.NewReader(b), ipc.WithAllocator(memory.DefaultAllocator),
		ipc.WithMetadataSizeLimit(int64(len(b))), ipc.WithBodySizeLimit(int64(len(b))))
	if err != nil {
		return "", nil, err
	}
	defer r.Release()
	md := r.Schema().Metadata()
	v := md.FindKey(metaVersion)
	if v < 0 || md.Values()[v] != strconv.Itoa(stream.SchemaVersion) {
		got := "none"
		if v >= 0 {
			got = md.Values()[v]
		}
		return "", nil, fmt.Errorf("schema version %s, this build reads %d", got, stream.SchemaVersion)
	}
	if t := md.FindKey(metaTable); t >= 0 {
		table = md.Values()[t]
	}
	if !r.Next() {
		if err := r.Err(); err != nil {
			return "", nil, err
		}
		return "", nil, errors.New("no record batch")
	}
	rec = r.RecordBatch()
	rec.Retain()
	if r.Next() {
		rec.Release()
		return "", nil, errors.New("more than one record batch")
	}
	return table, rec, nil
}
