package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
)

const sqlHelp = `Usage: trainscope sql (--db FILE | --server ADDR) [--format table|csv|json] "SELECT ..."

Runs SQL on a database written by 'trainscope analyze --db FILE' (opened
read-only), or on the live database of a running 'trainscope serve'
through its Flight SQL endpoint (--server host:port; the server runs
read-only queries only). Give the query as an argument, or '-' to read
it from stdin.

Tables: runs, ranks, process_groups, threads, stacks, slices (a view over
slices_core and slices_detail), steps, counters, mem_segments, mem_blocks,
mem_events, mem_settings, script_flags, script_context, findings, metrics,
root_causes (the report's ranked root causes), analysis_window, gpu_specs;
the pipeline's bookkeeping: ingested_batches, rejected_batches and
analyses. Views: gpu_window, host_window, gpu_span, gpu_busy,
gpu_class_time, collective_instances (each rank's wait and transfer in
every matched collective), collective_waits, late_arrivals,
host_op_time, step_memory_peaks, run_status, analysed_span (the time
each rank's analysed steps span), counters_by_rank (counters with the
rank of their GPU), gpu_samples (GPU counters from any source
under one vocabulary: sm_clock_mhz, power_w, temp_c, clock_reasons, xid,
tensor_active ...), rank_steps (one row per run, rank and step: step time,
compute, transfer and wait, memory peaks, clocks, power and throttling
during the step, the launch script's parallel settings). Macros:
interval_union, covered_time, exposed_time, robust_z, pct, fmt_ns,
fmt_bytes, peak_tflops, dtype_bytes, bus_factor, clock_reasons_text,
xid_text.

Rows are printed as they arrive. A server may limit a query's time and rows
(serve.query.timeout, serve.query.max_rows) and ask for a token (--token,
or TRAINSCOPE_TOKEN) and TLS (grpc+tls://host:port, --ca, --cert/--key).

Examples:
  trainscope sql --db run.duckdb "SELECT severity, message FROM findings"
  trainscope sql --db run.duckdb --format csv "SELECT * FROM metrics WHERE detector = 'temporal_breakdown'"
  trainscope sql --server localhost:50051 --format json "SELECT run_id, world_size FROM runs"

Flags:
`

func runSQL(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("sql", sqlHelp, errOut)
	db := fs.String("db", "", "database file written by analyze --db")
	server := fs.String("server", "", "host:port of a running 'trainscope serve' Flight SQL endpoint")
	format := fs.String("format", "table", "output format: table, csv or json")
	var dialer flightsrv.Dialer
	fs.StringVar(&dialer.Token, "token", os.Getenv("TRAINSCOPE_TOKEN"), "bearer token for --server (default: TRAINSCOPE_TOKEN)")
	fs.StringVar(&dialer.CAFile, "ca", "", "CA certificate (PEM) to verify --server's TLS certificate")
	fs.StringVar(&dialer.CertFile, "cert", "", "client certificate (PEM) for a --server that requires one")
	fs.StringVar(&dialer.KeyFile, "key", "", "client key (PEM) for --cert")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if (*db == "") == (*server == "") {
		return &usageError{"sql: give exactly one of --db FILE (a database written by 'trainscope analyze --db FILE') or --server ADDR (a running 'trainscope serve')"}
	}
	if fs.NArg() == 0 {
		return &usageError{"sql: give a query, or '-' to read it from stdin"}
	}
	switch *format {
	case "table", "csv", "json":
	default:
		return &usageError{fmt.Sprintf("sql: --format %q: want table, csv or json", *format)}
	}
	query := strings.Join(fs.Args(), " ")
	if query == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		query = string(b)
	}
	if *server != "" {
		var w *rowWriter
		err := dialer.Stream(ctx, *server, query, func(schema *arrow.Schema, rec arrow.RecordBatch) error {
			if w == nil {
				cols := make([]string, schema.NumFields())
				for i, f := range schema.Fields() {
					cols[i] = f.Name
				}
				w = newRowWriter(cols, *format, out)
			}
			if rec == nil {
				return nil
			}
			for r := 0; r < int(rec.NumRows()); r++ {
				row := make([]any, rec.NumCols())
				for c := range row {
					row[c] = arrowValue(rec.Column(c), r)
				}
				if err := w.row(row); err != nil {
					return err
				}
			}
			return nil
		})
		if w != nil {
			// what arrived is printed, even when the server stopped early
			if cerr := w.close(); err == nil {
				err = cerr
			}
		}
		if errors.Is(err, flightsrv.ErrNoServer) {
			return err // not the query's fault: exit 1
		}
		if err != nil {
			return &inputError{err}
		}
		return nil
	}
	st, err := duck.Open(ctx, *db, duck.Options{ReadOnly: true})
	if err != nil {
		return &inputError{err}
	}
	defer st.Close()
	rows, err := st.Query(ctx, query)
	if err != nil {
		return &inputError{fmt.Errorf("query: %w", err)}
	}
	defer rows.Close()
	return writeRows(rows, *format, out)
}

func writeRows(rows *sql.Rows, format string, out io.Writer) error {
	cols, err := rows.Columns()
	if err != nil {
		return err
	}
	w := newRowWriter(cols, format, out)
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := w.row(vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		w.close()
		return err
	}
	return w.close()
}

// rowWriter prints rows of Go values (as database/sql scans them, or as
// arrowValue converts them) as they come, in one of the formats: a result
// of 100M rows is never held. A table's column widths come from its first
// tableBlock rows; later rows keep them (a longer value overflows its
// column).
type rowWriter struct {
	cols   []string
	format string
	out    *bufio.Writer
	csv    *csv.Writer
	n      int
	block  [][]string // table rows waiting for the widths
	widths []int      // table column widths, once known
}

const tableBlock = 1000

func newRowWriter(cols []string, format string, out io.Writer) *rowWriter {
	w := &rowWriter{cols: cols, format: format, out: bufio.NewWriterSize(out, 64<<10)}
	switch format {
	case "csv":
		w.csv = csv.NewWriter(w.out)
		w.csv.Write(cols)
	case "json":
		w.out.WriteString("[")
	}
	return w
}

func (w *rowWriter) row(r []any) error {
	w.n++
	switch w.format {
	case "json":
		o := make(map[string]any, len(w.cols))
		for i, c := range w.cols {
			o[c] = jsonValue(r[i])
		}
		b, err := json.MarshalIndent(o, "  ", "  ")
		if err != nil {
			return err
		}
		if w.n > 1 {
			w.out.WriteString(",")
		}
		w.out.WriteString("\n  ")
		w.out.Write(b)
	case "csv":
		line := make([]string, len(r))
		for i, v := range r {
			line[i] = text(v)
		}
		w.csv.Write(line)
	default:
		line := make([]string, len(r))
		for i, v := range r {
			line[i] = text(v)
			if len(line[i]) > 100 {
				line[i] = line[i][:99] + "…"
			}
			line[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(line[i])
		}
		if w.widths == nil {
			w.block = append(w.block, line)
			if len(w.block) == tableBlock {
				w.flushBlock()
			}
			return nil
		}
		w.tableLine(line)
	}
	if w.n%tableBlock == 0 {
		return w.out.Flush()
	}
	return nil
}

// flushBlock fixes the table's widths from the header and the rows so
// far, the way text/tabwriter aligns them, and prints them.
func (w *rowWriter) flushBlock() {
	w.widths = make([]int, len(w.cols))
	for _, line := range append([][]string{w.cols}, w.block...) {
		for i, c := range line {
			w.widths[i] = max(w.widths[i], utf8.RuneCountInString(c))
		}
	}
	w.tableLine(w.cols)
	for _, line := range w.block {
		w.tableLine(line)
	}
	w.block = nil
}

func (w *rowWriter) tableLine(line []string) {
	for i, c := range line {
		w.out.WriteString(c)
		if i < len(line)-1 {
			w.out.WriteString(strings.Repeat(" ", max(w.widths[i]-utf8.RuneCountInString(c), 0)+2))
		}
	}
	w.out.WriteString("\n")
}

func (w *rowWriter) close() error {
	switch w.format {
	case "json":
		if w.n > 0 {
			w.out.WriteString("\n")
		}
		w.out.WriteString("]\n")
	case "csv":
		w.csv.Flush()
		if err := w.csv.Error(); err != nil {
			return err
		}
	default:
		if w.widths == nil {
			w.flushBlock()
		}
		fmt.Fprintf(w.out, "(%d rows)\n", w.n)
	}
	return w.out.Flush()
}

func text(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	case []byte:
		return string(x)
	case time.Time:
		return x.Format(time.RFC3339Nano)
	}
	if b, err := json.Marshal(jsonValue(v)); err == nil && !isScalarString(v) {
		return string(b)
	}
	return fmt.Sprint(v)
}

func isScalarString(v any) bool {
	_, ok := v.(string)
	return ok
}

func jsonValue(v any) any {
	switch x := v.(type) {
	case *big.Int:
		if x.IsInt64() {
			return x.Int64()
		}
		return x.String()
	case []byte:
		return string(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = jsonValue(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = jsonValue(e)
		}
		return out
	}
	return v
}

// arrowValue is the Go value database/sql would give for one Arrow cell:
// integers, floats, strings, time.Time, slices for lists, maps for structs
// and maps. Strings and bytes are copied, as Arrow's alias the batch.
func arrowValue(a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch c := a.(type) {
	case *array.Boolean:
		return c.Value(i)
	case *array.Int8:
		return int64(c.Value(i))
	case *array.Int16:
		return int64(c.Value(i))
	case *array.Int32:
		return int64(c.Value(i))
	case *array.Int64:
		return c.Value(i)
	case *array.Uint8:
		return uint64(c.Value(i))
	case *array.Uint16:
		return uint64(c.Value(i))
	case *array.Uint32:
		return uint64(c.Value(i))
	case *array.Uint64:
		return c.Value(i)
	case *array.Float32:
		return float64(c.Value(i))
	case *array.Float64:
		return c.Value(i)
	case *array.String:
		return strings.Clone(c.Value(i))
	case *array.LargeString:
		return strings.Clone(c.Value(i))
	case *array.StringView:
		return strings.Clone(c.Value(i))
	case *array.Binary:
		return bytes.Clone(c.Value(i))
	case *array.LargeBinary:
		return bytes.Clone(c.Value(i))
	case *array.Timestamp:
		return c.Value(i).ToTime(c.DataType().(*arrow.TimestampType).Unit)
	case *array.Date32:
		return c.Value(i).ToTime()
	case *array.Date64:
		return c.Value(i).ToTime()
	case *array.Decimal128:
		// HUGEINT arrives as decimal(38, 0): keep it exact.
		if scale := c.DataType().(*arrow.Decimal128Type).Scale; scale != 0 {
			return c.Value(i).ToFloat64(scale)
		}
		return c.Value(i).BigInt()
	case *array.MonthDayNanoInterval:
		// The shape database/sql gives DuckDB's INTERVAL.
		v := c.Value(i)
		return map[string]any{"months": v.Months, "days": v.Days, "micros": v.Nanoseconds / 1000}
	case *array.Dictionary:
		return arrowValue(c.Dictionary(), c.GetValueIndex(i))
	case *array.Struct:
		st := c.DataType().(*arrow.StructType)
		m := make(map[string]any, c.NumField())
		for f := 0; f < c.NumField(); f++ {
			m[st.Field(f).Name] = arrowValue(c.Field(f), i)
		}
		return m
	case *array.Map:
		start, end := c.ValueOffsets(i)
		m := make(map[string]any, end-start)
		for j := start; j < end; j++ {
			m[text(arrowValue(c.Keys(), int(j)))] = arrowValue(c.Items(), int(j))
		}
		return m
	case array.ListLike:
		start, end := c.ValueOffsets(i)
		l := make([]any, 0, end-start)
		for j := start; j < end; j++ {
			l = append(l, arrowValue(c.ListValues(), int(j)))
		}
		return l
	case array.ExtensionArray:
		// DuckDB's own types (BIGNUM, ...) arrive as Arrow extensions:
		// their text if the extension gives one, else their storage
		if s, ok := valueStr(a, i); ok {
			return s
		}
		v := arrowValue(c.Storage(), i)
		if b, ok := v.([]byte); ok {
			// bytes in the extension's own encoding: show them, named
			return fmt.Sprintf("%s:0x%x", c.ExtensionType().ExtensionName(), b)
		}
		return v
	}
	if s, ok := valueStr(a, i); ok {
		return s
	}
	return fmt.Sprintf("<%s>", a.DataType())
}

// valueStr is Arrow's text of a value, which some array types do not
// implement (they panic: "ValueStr wasn't implemented").
func valueStr(a arrow.Array, i int) (s string, ok bool) {
	defer func() {
		if recover() != nil {
			s, ok = "", false
		}
	}()
	return strings.Clone(a.ValueStr(i)), true
}
