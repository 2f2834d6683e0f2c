package nsys

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	_ "modernc.org/sqlite" // pure Go: DuckDB's sqlite extension cannot be installed everywhere
)

// magic opens every SQLite 3 database file.
const magic = "SQLite format 3\x00"

// expected is what a file handed to ReadFile should be, for error messages.
const expected = "an Nsight Systems SQLite export (nsys export --type sqlite report.nsys-rep)"

// FileError is bad input: the file is not SQLite, not an nsys export, or
// truncated or corrupt. It names the file and what was expected; a SQLite
// file has no line or byte offset worth reporting.
type FileError struct {
	Path string
	Msg  string
	// Truncated: the file is shorter than its header says, as a file still
	// being copied or written is.
	Truncated bool
	Err       error // the driver's error, when there was one
}

func (e *FileError) Error() string { return e.Path + ": " + e.Msg }
func (e *FileError) Unwrap() error { return e.Err }

// IsSQLite reports whether the file at path starts with the SQLite 3 magic
// header. It reads 16 bytes and never fails: an unreadable file is not one.
func IsSQLite(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [len(magic)]byte
	if _, err := io.ReadFull(f, head[:]); err != nil {
		return false
	}
	return string(head[:]) == magic
}

// SniffHead says whether a file's first bytes are the SQLite 3 magic
// header (IsSQLite from bytes already read).
func SniffHead(head []byte) bool {
	return len(head) >= len(magic) && string(head[:len(magic)]) == magic
}

// checkHeader refuses what SQLite would only notice deep into a query: a
// file that is not SQLite at all, or one shorter than the page count its
// header records (a truncated copy).
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if st.IsDir() {
		return fmt.Errorf("%s: is a directory", path)
	}
	var h [100]byte
	n, _ := io.ReadFull(f, h[:])
	if n < len(magic) || string(h[:len(magic)]) != magic {
		what := "not an SQLite database"
		if n == 0 {
			what = "empty file"
		}
		return &FileError{Path: path, Msg: what + ": expected " + expected}
	}
	if n < len(h) {
		return &FileError{Path: path, Truncated: true, Msg: fmt.Sprintf("truncated SQLite header (%d of 100 bytes): expected %s", n, expected)}
	}
	pageSize := int64(binary.BigEndian.Uint16(h[16:18]))
	if pageSize == 1 {
		pageSize = 65536
	}
	pages := int64(binary.BigEndian.Uint32(h[28:32]))
	// The in-header page count is valid only when the change counter
	// matches "version-valid-for" (SQLite >= 3.7.0 writers keep them equal).
	if pages > 0 && binary.BigEndian.Uint32(h[24:28]) == binary.BigEndian.Uint32(h[92:96]) {
		if want := pages * pageSize; st.Size() < want {
			return &FileError{Path: path, Truncated: true,
				Msg: fmt.Sprintf("truncated SQLite file: the header records %d pages (%d bytes) but the file has %d bytes", pages, want, st.Size())}
		}
	}
	return nil
}

// db is an open export and what its schema holds.
type db struct {
	path   string
	ctx    context.Context
	conn   *sql.DB
	tables map[string]bool
	cols   map[string]map[string]bool // table -> columns, filled on demand
}

func openDB(ctx context.Context, path string) (*db, error) {
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// immutable=1: the export is finished and may sit on a read-only
	// mount, so SQLite must neither lock it nor look for a journal.
	dsn := "file:" + (&url.URL{Path: filepath.ToSlash(abs)}).EscapedPath() + "?mode=ro&immutable=1"
	conn, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, &FileError{Path: path, Msg: "cannot open as SQLite: " + err.Error(), Err: err}
	}
	conn.SetMaxOpenConns(1)
	d := &db{path: path, ctx: ctx, conn: conn, tables: map[string]bool{}, cols: map[string]map[string]bool{}}
	rows, err := conn.QueryContext(ctx, "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
	if err != nil {
		conn.Close()
		return nil, d.fail("reading the schema", err)
	}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			rows.Close()
			conn.Close()
			return nil, d.fail("reading the schema", err)
		}
		d.tables[name] = true
	}
	if err := rows.Err(); err != nil {
		rows.Close()
		conn.Close()
		return nil, d.fail("reading the schema", err)
	}
	rows.Close()
	if err := d.checkExport(); err != nil {
		conn.Close()
		return nil, err
	}
	return d, nil
}

func (d *db) Close() error { return d.conn.Close() }

// checkExport tells an nsys export from any other SQLite database: every
// export has StringIds, and one with anything to analyze has a CUPTI or
// NVTX table.
func (d *db) checkExport() error {
	var missing []string
	if !d.tables["StringIds"] {
		missing = append(missing, "StringIds")
	}
	traced := false
	for t := range d.tables {
		if strings.HasPrefix(t, "CUPTI_ACTIVITY_KIND_") || t == "NVTX_EVENTS" {
			traced = true
			break
		}
	}
	if !traced {
		missing = append(missing, "CUPTI_ACTIVITY_KIND_* or NVTX_EVENTS")
	}
	if len(missing) == 0 {
		return nil
	}
	msg := "an SQLite database but not an Nsight Systems export with CUDA or NVTX trace (no " + strings.Join(missing, ", no ") + " table)"
	if d.tables["META_DATA_EXPORT"] || d.tables["TARGET_INFO_SESSION_START_TIME"] {
		msg = "an Nsight Systems export without CUDA or NVTX trace (no " + strings.Join(missing, ", no ") +
			" table); profile with --trace=cuda,nvtx"
	}
	return &FileError{Path: d.path, Msg: msg + ": expected " + expected}
}

// fail wraps a driver error met while doing what.
func (d *db) fail(what string, err error) error {
	var fe *FileError
	if errors.As(err, &fe) {
		return err
	}
	msg := err.Error()
	low := strings.ToLower(msg)
	e := &FileError{Path: d.path, Err: err}
	switch {
	case strings.Contains(low, "not a database"):
		e.Msg = "not an SQLite database (" + msg + "): expected " + expected
	case strings.Contains(low, "malformed") || strings.Contains(low, "corrupt") || strings.Contains(low, "short read") ||
		strings.Contains(low, "disk i/o"):
		e.Msg = "corrupt or truncated SQLite file while " + what + " (" + msg + ")"
		e.Truncated = strings.Contains(low, "short read")
	default:
		e.Msg = what + ": " + msg
	}
	return e
}

// columns lists a table's columns (nil when the table is absent).
func (d *db) columns(table string) (map[string]bool, error) {
	if c, ok := d.cols[table]; ok {
		return c, nil
	}
	if !d.tables[table] {
		return nil, nil
	}
	rows, err := d.conn.QueryContext(d.ctx, "SELECT name FROM pragma_table_info(?)", table)
	if err != nil {
		return nil, d.fail("reading the columns of "+table, err)
	}
	defer rows.Close()
	c := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, d.fail("reading the columns of "+table, err)
		}
		c[name] = true
	}
	if err := rows.Err(); err != nil {
		return nil, d.fail("reading the columns of "+table, err)
	}
	d.cols[table] = c
	return c, nil
}

// sel builds "SELECT a, b, ... FROM table" where each wanted column that
// the table lacks reads as NULL, so older and newer export schemas read
// alike. required columns must exist. ok is false when the table is absent.
func (d *db) sel(table string, required []string, optional []string, tail string) (q string, ok bool, err error) {
	cols, err := d.columns(table)
	if err != nil || cols == nil {
		return "", false, err
	}
	var parts []string
	for _, c := range required {
		if !cols[c] {
			return "", false, &FileError{Path: d.path, Msg: fmt.Sprintf("table %s has no column %s: expected %s", table, c, expected)}
		}
		parts = append(parts, `"`+c+`"`)
	}
	for _, c := range optional {
		if cols[c] {
			parts = append(parts, `"`+c+`"`)
		} else {
			parts = append(parts, "NULL")
		}
	}
	return "SELECT " + strings.Join(parts, ", ") + " FROM " + table + " " + tail, true, nil
}

// each runs q and calls fn with scan for every row; fn's error stops it.
func (d *db) each(what, q string, args []any, fn func(scan func(dst ...any) error) error) error {
	rows, err := d.conn.QueryContext(d.ctx, q, args...)
	if err != nil {
		return d.fail(what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows.Scan); err != nil {
			return d.fail(what, err)
		}
	}
	if err := rows.Err(); err != nil {
		return d.fail(what, err)
	}
	return nil
}

// stringIDs loads StringIds: kernel, API and NVTX names are ids into it.
func (d *db) stringIDs() (map[int64]string, error) {
	out := map[int64]string{}
	err := d.each("reading StringIds", "SELECT id, value FROM StringIds", nil, func(scan func(...any) error) error {
		var id int64
		var v sql.NullString
		if err := scan(&id, &v); err != nil {
			return err
		}
		out[id] = v.String
		return nil
	})
	return out, err
}

// sessionStart is the capture start in ns since the Unix epoch: nsys stores
// every timestamp as ns since that instant.
func (d *db) sessionStart() (int64, bool, error) {
	q, ok, err := d.sel("TARGET_INFO_SESSION_START_TIME", nil, []string{"utcEpochNs"}, "LIMIT 1")
	if err != nil || !ok {
		return 0, false, err
	}
	var v sql.NullInt64
	found := false
	err = d.each("reading TARGET_INFO_SESSION_START_TIME", q, nil, func(scan func(...any) error) error {
		found = true
		return scan(&v)
	})
	if err != nil || !found || !v.Valid || v.Int64 <= 0 {
		return 0, false, err
	}
	return v.Int64, true, nil
}
