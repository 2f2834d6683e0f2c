package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// errSchemasDiffer: the files of a merge do not all have one schema (a
// publisher of another version wrote some); DuckDB's COPY merges them.
var errSchemasDiffer = errors.New("the files have different schemas")

// mergeRowGroup is the row group of a merged file: DuckDB's own size, so
// that a scan of one merged file still runs on every thread.
const mergeRowGroup = 122_880

// mergeParquet writes the rows of srcs, in order, as the Parquet file dst
// (synced), decoding one row group at a time: strings stay dictionary
// encoded from file to file, the batches of each row group written
// together over one dictionary. It costs a third of DuckDB's COPY of the
// same files (bench/RESULTS.md), which the ingestor waits for. Files whose
// schemas differ give errSchemasDiffer and write nothing.
func mergeParquet(ctx context.Context, dst string, srcs []string) error {
	readers := make([]*file.Reader, 0, len(srcs))
	defer func() {
		for _, r := range readers {
			r.Close()
		}
	}()
	var sc *arrow.Schema
	var arrowReaders []*pqarrow.FileReader
	for _, p := range srcs {
		r, err := file.OpenParquetFile(p, false)
		if err != nil {
			return err
		}
		readers = append(readers, r)
		fr, err := pqarrow.NewFileReader(r, readProps(r), memory.DefaultAllocator)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		arrowReaders = append(arrowReaders, fr)
		s, err := fr.Schema()
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if sc == nil {
			sc = s
		} else if !sc.Equal(s) {
			return errSchemasDiffer
		}
	}
	return writeFile(dst, func(out *os.File) error { return writeMerged(ctx, out, sc, srcs, arrowReaders) })
}

// writeMerged writes the rows of readers (of files srcs, schema sc) to out
// as Parquet, row group by row group.
func writeMerged(ctx context.Context, out *os.File, sc *arrow.Schema, srcs []string, arrowReaders []*pqarrow.FileReader) error {
	props := parquet.NewWriterProperties(append(stagedOptions(sc), parquet.WithMaxRowGroupLength(mergeRowGroup))...)
	w, err := pqarrow.NewFileWriter(sc, struct{ io.Writer }{out}, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	// a row group's batches, concatenated before they are written: one
	// dictionary a column chunk (see concatRecords)
	var pending []arrow.RecordBatch
	var rows int64
	flush := func() error {
		if len(pending) == 0 {
			return nil
		}
		rec, err := concatRecords(sc, pending)
		for _, p := range pending {
			p.Release()
		}
		pending, rows = pending[:0], 0
		if err != nil {
			return err
		}
		defer rec.Release()
		return w.Write(rec)
	}
	defer func() {
		for _, p := range pending {
			p.Release()
		}
	}()
	for i, fr := range arrowReaders {
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			w.Close()
			return fmt.Errorf("%s: %w", srcs[i], err)
		}
		for rr.Next() {
			rec := rr.RecordBatch()
			rec.Retain()
			pending = append(pending, rec)
			if rows += rec.NumRows(); rows >= mergeRowGroup {
				if err := flush(); err != nil {
					rr.Release()
					w.Close()
					return err
				}
			}
		}
		err = rr.Err()
		rr.Release()
		if err != nil && !errors.Is(err, io.EOF) {
			w.Close()
			return fmt.Errorf("%s: %w", srcs[i], err)
		}
	}
	if err := flush(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// writeFile creates the file dst and writes it with write, then syncs and
// closes it; on any error it removes it.
func writeFile(dst string, write func(*os.File) error) (err error) {
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(dst)
		}
	}()
	if err := write(out); err != nil {
		return err
	}
	return out.Sync()
}

// readProps reads every string column of r as a dictionary, as the
// ingestor wrote it.
func readProps(r *file.Reader) pqarrow.ArrowReadProperties {
	props := pqarrow.ArrowReadProperties{BatchSize: mergeRowGroup}
	sc := r.MetaData().Schema
	for i := range sc.NumColumns() {
		if sc.Column(i).PhysicalType() == parquet.Types.ByteArray {
			props.SetReadDict(i, true)
		}
	}
	return props
}
