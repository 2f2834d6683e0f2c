package main

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/trainscope/trainscope/sql/duck"
)

const sqlHelp = `Usage: trainscope sql --db FILE [--format table|csv|json] "SELECT ..."

Runs SQL on a database written by 'trainscope analyze --db FILE'. The
database is opened read-only. Give the query as an argument, or '-' to read
it from stdin.

Tables: runs, ranks, process_groups, slices, steps, counters, findings,
metrics, analysis_window. Views: gpu_window, host_window, gpu_span,
collective_instances, collective_waits. Macros: interval_union,
covered_time, exposed_time, robust_z, pct, fmt_ns.

Examples:
  trainscope sql --db run.duckdb "SELECT severity, message FROM findings"
  trainscope sql --db run.duckdb --format csv "SELECT * FROM metrics WHERE detector = 'temporal_breakdown'"

Flags:
`

func runSQL(ctx context.Context, args []string, out, errOut io.Writer) error {
	fs := flagSet("sql", sqlHelp, errOut)
	db := fs.String("db", "", "database file written by analyze --db (required)")
	format := fs.String("format", "table", "output format: table, csv or json")
	if err := parseFlags(fs, args, out); err != nil {
		return err
	}
	if *db == "" {
		return &usageError{"sql: --db FILE is required (write one with 'trainscope analyze --db FILE')"}
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
	var records [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		records = append(records, vals)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	switch format {
	case "json":
		objs := make([]map[string]any, 0, len(records))
		for _, r := range records {
			o := make(map[string]any, len(cols))
			for i, c := range cols {
				o[c] = jsonValue(r[i])
			}
			objs = append(objs, o)
		}
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(objs)
	case "csv":
		w := csv.NewWriter(out)
		w.Write(cols)
		for _, r := range records {
			line := make([]string, len(r))
			for i, v := range r {
				line[i] = text(v)
			}
			w.Write(line)
		}
		w.Flush()
		return w.Error()
	}
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	for _, r := range records {
		line := make([]string, len(r))
		for i, v := range r {
			line[i] = text(v)
			if len(line[i]) > 100 {
				line[i] = line[i][:99] + "…"
			}
			line[i] = strings.NewReplacer("\t", " ", "\n", " ").Replace(line[i])
		}
		fmt.Fprintln(tw, strings.Join(line, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "(%d rows)\n", len(records))
	return err
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
