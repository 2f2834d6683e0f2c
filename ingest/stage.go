package ingest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"golang.org/x/sync/errgroup"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/stream"
)

// stagedFile is one Parquet file of a commit in a staged store: the
// batches of one table and run with one schema, written as rel+StagedTmp
// under the store's staged folder before the transaction and renamed to
// rel after it committed.
type stagedFile struct {
	rel        string
	table, run string
	items      []*item
	rows       int64
	bytes      int64
}

// stageFiles groups the live items of staged tables into files: one per
// table, run and schema, named by the first message's stream sequence
// (unique: a message is committed once).
func stageFiles(st *duck.Store, items []*item) []*stagedFile {
	var files []*stagedFile
	byKey := map[string]*stagedFile{}
	for _, it := range items {
		if it.poison != nil || it.skipped || !st.Staged(it.table) {
			continue
		}
		key := it.table + "\x00" + it.run + "\x00" + it.rec.Schema().String()
		f := byKey[key]
		if f == nil {
			name := fmt.Sprintf("%020d", it.seq)
			if it.seq == 0 { // no stream metadata: name it by its id
				sum := sha256.Sum256([]byte(it.id))
				name = "id-" + hex.EncodeToString(sum[:12])
			}
			f = &stagedFile{rel: filepath.Join(it.table, "run="+stream.RunPathToken(it.run), name+".parquet"), table: it.table, run: it.run}
			byKey[key] = f
			files = append(files, f)
		}
		f.items = append(f.items, it)
		f.rows += it.rec.NumRows()
	}
	return files
}

// writeStaged writes the files, up to workers at a time (0: one per
// core), each synced to disk before the transaction that records it
// commits.
func writeStaged(ctx context.Context, dir string, files []*stagedFile, workers int) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	g, _ := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for _, f := range files {
		g.Go(func() error { return f.write(dir) })
	}
	return g.Wait()
}

// stageError is trouble writing a staged file (a full disk, say): a retry
// may get past it, so the batches come back instead of being rejected.
type stageError struct{ err error }

func (e stageError) Error() string { return e.err.Error() }
func (e stageError) Unwrap() error { return e.err }

// transient says whether a failed commit may succeed when tried again.
func transient(err error) bool {
	var se stageError
	return duck.Transient(err) || errors.As(err, &se)
}

func (f *stagedFile) write(dir string) (err error) {
	defer func() {
		if err != nil {
			err = stageError{fmt.Errorf("stage %s: %w", f.rel, err)}
		}
	}()
	path := filepath.Join(dir, f.rel+duck.StagedTmp)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := writeFile(path, f.writeTo); err != nil {
		return err
	}
	if fi, err := os.Stat(path); err == nil {
		f.bytes = fi.Size()
	}
	return nil
}

// writeTo writes the file's batches to out as one row group.
func (f *stagedFile) writeTo(out *os.File) error {
	sc := f.items[0].rec.Schema()
	// the writer closes what it writes to: give it a writer alone, so
	// that the file is synced before it is closed
	w, err := pqarrow.NewFileWriter(sc, struct{ io.Writer }{out}, stagedProps(sc), pqarrow.DefaultWriterProps())
	if err != nil {
		return err
	}
	recs := make([]arrow.RecordBatch, len(f.items))
	for i, it := range f.items {
		recs[i] = it.rec
	}
	rec, err := concatRecords(sc, recs)
	if err != nil {
		w.Close()
		return err
	}
	err = w.WriteBuffered(rec)
	rec.Release()
	if err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// concatRecords makes one record of recs (one schema), each dictionary
// column over one dictionary: arrow-go's Parquet writer keeps a column
// chunk dictionary encoded only while every batch brings the dictionary
// of the first, and falls back to plain strings (every 200-character
// kernel name written out, and hashed) at the first that does not, which
// each message's own dictionary did.
func concatRecords(sc *arrow.Schema, recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
	cols := make([]arrow.Array, sc.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, r := range recs {
		rows += r.NumRows()
	}
	chunks := make([]arrow.Array, len(recs))
	for i := range cols {
		for j, r := range recs {
			chunks[j] = r.Column(i)
		}
		c, err := array.Concatenate(chunks, memory.DefaultAllocator)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", sc.Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(sc, cols, rows), nil
}

// stagedProps: Snappy, dictionaries for the string columns only (those of
// timestamps and durations cost a hash lookup a value and find nothing to
// share: dictionaries on every column made the staged ingest 25% slower),
// and statistics for the columns queries filter a file's row groups on.
func stagedProps(sc *arrow.Schema) *parquet.WriterProperties {
	return parquet.NewWriterProperties(stagedOptions(sc)...)
}

func stagedOptions(sc *arrow.Schema) []parquet.WriterProperty {
	opts := []parquet.WriterProperty{parquet.WithCompression(compress.Codecs.Snappy),
		parquet.WithDictionaryDefault(false), parquet.WithStats(false)}
	for _, fld := range sc.Fields() {
		switch fld.Type.ID() {
		case arrow.STRING, arrow.DICTIONARY:
			opts = append(opts, parquet.WithDictionaryFor(fld.Name, true))
		}
		switch fld.Name {
		case "run_id", "rank", "step", "ts":
			opts = append(opts, parquet.WithStatsFor(fld.Name, true))
		}
	}
	return opts
}

// recordStaged inserts the files' staged_files rows: in the transaction
// that holds their batches' ledger rows.
func recordStaged(ctx context.Context, st *duck.Store, files []*stagedFile) error {
	if len(files) == 0 {
		return nil
	}
	var args []any
	now := time.Now().UnixNano()
	for _, f := range files {
		args = append(args, filepath.ToSlash(f.rel), f.table, f.run, f.rows, f.bytes, now)
	}
	q := "INSERT INTO staged_files (path, tbl, run_id, rows, bytes, staged_ns) VALUES (?, ?, ?, ?, ?, ?)" +
		strings.Repeat(", (?, ?, ?, ?, ?, ?)", len(files)-1)
	if err := st.Exec(ctx, q, args...); err != nil {
		return fmt.Errorf("record staged files: %w", err)
	}
	return nil
}

// settleStaged renames the files of a committed transaction into view, or
// removes those of one that failed, unless staged_files says otherwise
// (whether a failed commit committed is asked, not assumed; when the
// store cannot say, the files stay for its next open to settle). A rename
// that fails now is done when the store is next opened.
func (c *Consumer) settleStaged(ctx context.Context, files []*stagedFile, committed bool) error {
	if !committed {
		args := make([]any, len(files))
		for i, f := range files {
			args[i] = filepath.ToSlash(f.rel)
		}
		var n int
		q := "SELECT count(*) FROM staged_files WHERE path IN (?" + strings.Repeat(", ?", len(files)-1) + ")"
		if err := c.St.Conn().QueryRowContext(context.WithoutCancel(ctx), q, args...).Scan(&n); err != nil {
			return fmt.Errorf("after a failed commit, ask which staged files it recorded: %w (their next open settles them)", err)
		}
		committed = n > 0
	}
	return settleStaged(c.St.StagedDir(), files, committed)
}

func settleStaged(dir string, files []*stagedFile, committed bool) error {
	var errs []error
	for _, f := range files {
		tmp := filepath.Join(dir, f.rel+duck.StagedTmp)
		var err error
		if committed {
			err = os.Rename(tmp, filepath.Join(dir, f.rel))
		} else {
			err = os.Remove(tmp)
		}
		if err != nil && (committed || !errors.Is(err, os.ErrNotExist)) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
