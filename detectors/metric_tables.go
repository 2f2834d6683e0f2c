package detectors

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/trainscope/trainscope/sql/duck"
)

// MetricTablePrefix starts the name of every metric detector's own table:
// metric_<name> holds the detector's rows as it returned them, one column
// per output column, for finding detectors to read by column. The metrics
// table keeps the same numbers one per row (detector, metric) for
// dashboards, the archive and SQL clients.
const MetricTablePrefix = "metric_"

// metricTableName is the name of the table metric detector name's rows go to.
func metricTableName(name string) string { return MetricTablePrefix + name }

// metricKeyTypes are the types of the key columns, as the metrics table
// has them.
var metricKeyTypes = map[string]string{"run_id": "VARCHAR", "rank": "INTEGER", "step_lo": "INTEGER", "step_hi": "INTEGER", "subject": "VARCHAR"}

// metricColumn is one column of a metric table.
type metricColumn struct{ name, typ, doc string }

// metricColumns are the columns of d's table for its output cols: the key
// columns typed as in metrics, text columns VARCHAR, and every number
// DOUBLE, the type metrics.value gives findings (so that a finding reads
// the same numbers from either).
func (d *Detector) metricColumns(cols []*sql.ColumnType) []metricColumn {
	keyDoc := map[string]string{
		"run_id":  "the run",
		"rank":    "the rank (NULL: the whole run)",
		"step_lo": "the first step the row covers (NULL: the analysis window's)",
		"step_hi": "the last step the row covers (NULL: the analysis window's)",
		"subject": "what was measured",
	}
	out := make([]metricColumn, 0, len(cols))
	for _, c := range cols {
		n := c.Name()
		switch {
		case metricKeys[n]:
			out = append(out, metricColumn{n, metricKeyTypes[n], keyDoc[n]})
		case strings.ToUpper(c.DatabaseTypeName()) == "VARCHAR":
			out = append(out, metricColumn{n, "VARCHAR", "names what was measured; metrics.subject joins the text columns with ' | '"})
		default:
			out = append(out, metricColumn{n, "DOUBLE", fmt.Sprintf("in metrics: detector = '%s' AND metric = '%s'", d.Name, n)})
		}
	}
	return out
}

// metricTables is what a pass knows of the database's metric tables: the
// columns and comment of each, learnt once as the pass starts and kept up
// to date as its detectors make tables. Asking the catalog again for each
// detector (duckdb_tables() and pragma_table_info, 5-28 ms a detector
// while the other connections run queries) cost syn8's detectors 0.32 s
// summed over both connections. The detectors of a pass run side by
// side: mu guards known.
type metricTables struct {
	mu    sync.Mutex
	known map[string]metricTable // by table name
	// bare leaves the tables' comments out (Set.Uncommented)
	bare bool
}

// metricTable is one metric table as the catalog has it.
type metricTable struct {
	cols    [][2]string // (name, type), in order
	comment string
}

func (m *metricTables) get(table string) (metricTable, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.known[table]
	return t, ok
}

func (m *metricTables) set(table string, t metricTable) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.known[table] = t
}

// storeMetric copies _detector_out into metric detector d's table and
// into metrics, one row per number, in one transaction. col(name, def) is
// the output's column name, else def under that name. tables, where not
// nil, knows d's table as it stands and hears what it becomes; nil asks
// the catalog.
func (d *Detector) storeMetric(ctx context.Context, st *duck.Store, cols []*sql.ColumnType, col func(name, def string) string, tables *metricTables) error {
	var numeric, text []string
	for _, c := range cols {
		if metricKeys[c.Name()] && c.Name() != "subject" {
			continue
		}
		switch strings.ToUpper(c.DatabaseTypeName()) {
		case "VARCHAR":
			text = append(text, `"`+c.Name()+`"`)
		case "BOOLEAN", "BLOB", "DATE", "TIMESTAMP", "LIST", "STRUCT", "MAP":
			return fmt.Errorf("metric column %q is %s; metric detectors return numbers, and text columns that name what was measured", c.Name(), c.DatabaseTypeName())
		default:
			numeric = append(numeric, c.Name())
		}
	}
	table := metricTableName(d.Name)
	var have metricTable
	var ok bool
	if tables != nil {
		have, ok = tables.get(table)
	} else {
		var err error
		if have, ok, err = tableColumns(ctx, st, table); err != nil {
			return fmt.Errorf("store %s: %w", table, err)
		}
	}
	stmts, now := d.tableStmts(cols, have, ok, tables != nil && tables.bare)
	if len(numeric) > 0 {
		subject := "NULL::VARCHAR"
		if len(text) > 0 {
			subject = "concat_ws(' | ', " + strings.Join(text, ", ") + ")"
		}
		// unnest in the select list, not a LATERAL join: DuckDB plans the
		// join as a correlated subquery, 5 ms a statement against 3
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO metrics (run_id, detector, rank, step_lo, step_hi, subject, metric, value)
SELECT run_id, %s, rank, step_lo, step_hi, subject, m.metric, m.value
FROM (SELECT run_id, %s, %s, %s, %s AS subject, unnest([%s]) AS m FROM _detector_out)`,
			duck.Literal(d.Name), col("rank", "NULL::INTEGER"), col("step_lo", "NULL::INTEGER"), col("step_hi", "NULL::INTEGER"),
			subject, structList(numeric, duck.Literal)))
	}
	// one transaction, so one commit, for the table and metrics: the
	// metrics insert committing on its own cost syn8's pass as much
	// again as the table's statements
	if err := st.Tx(ctx, func() error { return st.Exec(ctx, strings.Join(stmts, ";\n")) }); err != nil {
		return fmt.Errorf("store %s: %w", table, err)
	}
	if tables != nil {
		tables.set(table, now)
	}
	return nil
}

// tableStmts are the statements that add _detector_out's rows to d's
// table (Run has cleared their runs), creating the table from the
// output's columns where it is missing and again where the detector's
// columns changed since it was made (a new version, or an edited user
// detector): the table then starts over with this pass's runs, while
// metrics keeps the numbers of the others. have is the table as it
// stands (ok false: there is none); now is what it will be. bare leaves
// the comments out.
func (d *Detector) tableStmts(cols []*sql.ColumnType, have metricTable, ok, bare bool) (stmts []string, now metricTable) {
	table := metricTableName(d.Name)
	want := d.metricColumns(cols)
	now = metricTable{cols: make([][2]string, len(want)), comment: d.Description}
	for i, c := range want {
		now.cols[i] = [2]string{c.name, c.typ}
	}
	same := ok && slices.Equal(have.cols, now.cols)
	if bare {
		// no comment is written: the table keeps what it had, unless made anew
		now.comment = ""
		if same {
			now.comment = have.comment
		}
	}
	if !same {
		defs := make([]string, len(want))
		for i, c := range want {
			defs[i] = quoteIdent(c.name) + " " + c.typ
		}
		if ok {
			stmts = append(stmts, "DROP TABLE "+table)
		}
		stmts = append(stmts, fmt.Sprintf("CREATE TABLE %s (%s)", table, strings.Join(defs, ", ")))
	}
	if !bare && (!same || have.comment != d.Description) {
		// documented where SQL clients look (duckdb_tables(),
		// duckdb_columns()), from the header and the column types
		stmts = append(stmts, fmt.Sprintf("COMMENT ON TABLE %s IS %s", table, duck.Literal(d.Description)))
		for _, c := range want {
			stmts = append(stmts, fmt.Sprintf("COMMENT ON COLUMN %s.%s IS %s", table, quoteIdent(c.name), duck.Literal(c.doc)))
		}
	}
	sel := make([]string, len(want))
	for i, c := range want {
		sel[i] = fmt.Sprintf("CAST(%s AS %s)", quoteIdent(c.name), c.typ)
	}
	// Run has cleared this pass's runs from the table
	stmts = append(stmts, fmt.Sprintf("INSERT INTO %s SELECT %s FROM _detector_out", table, strings.Join(sel, ", ")))
	return stmts, now
}

// tableColumns is main's table as the catalog has it; ok is false when
// there is no such table. (duckdb_columns() would bind every view of the
// schema to list theirs: ~40 ms a call.)
func tableColumns(ctx context.Context, st *duck.Store, table string) (t metricTable, ok bool, err error) {
	var comment sql.NullString
	err = st.Conn().QueryRowContext(ctx, `SELECT comment FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ? AND NOT temporary`, table).Scan(&comment)
	if errors.Is(err, sql.ErrNoRows) {
		return t, false, nil
	}
	if err != nil {
		return t, false, err
	}
	cols, err := pragmaColumns(ctx, st, []string{table})
	return metricTable{cols: cols[table], comment: comment.String}, true, err
}

// pragmaColumns are the (name, type) columns of main's tables, in order,
// by table: one query for all of them.
func pragmaColumns(ctx context.Context, st *duck.Store, tables []string) (map[string][][2]string, error) {
	out := map[string][][2]string{}
	if len(tables) == 0 {
		return out, nil
	}
	parts := make([]string, len(tables))
	for i, t := range tables {
		parts[i] = fmt.Sprintf("SELECT %s AS t, name, type, cid FROM pragma_table_info(%s)", duck.Literal(t), duck.Literal("main."+t))
	}
	rows, err := st.Query(ctx, strings.Join(parts, " UNION ALL ")+" ORDER BY t, cid")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var t, n, typ string
		var cid int
		if err := rows.Scan(&t, &n, &typ, &cid); err != nil {
			return nil, err
		}
		out[t] = append(out[t], [2]string{n, typ})
	}
	return out, rows.Err()
}

// clearMetricTables deletes the rows of the database's runs from every
// metric table, as Run does from metrics: a metric detector that fails
// this pass must not leave a finding the rows of the last one. It returns
// the tables as they stand, for the pass's detectors to store into.
func clearMetricTables(ctx context.Context, st *duck.Store) (*metricTables, error) {
	rows, err := st.Query(ctx, `SELECT table_name, comment FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND NOT temporary AND starts_with(table_name, ?)
ORDER BY 1`, MetricTablePrefix)
	if err != nil {
		return nil, err
	}
	var tables []string
	comments := map[string]string{}
	for rows.Next() {
		var n string
		var c sql.NullString
		if err := rows.Scan(&n, &c); err != nil {
			rows.Close()
			return nil, err
		}
		tables = append(tables, n)
		comments[n] = c.String
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	// one transaction: a file store's commit apiece wrote its log once
	// per table
	if err := st.Tx(ctx, func() error {
		for _, t := range tables {
			if err := st.Exec(ctx, "DELETE FROM "+quoteIdent(t)+" WHERE run_id IN (SELECT run_id FROM ranks)"); err != nil {
				return fmt.Errorf("clear %s: %w", t, err)
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	cols, err := pragmaColumns(ctx, st, tables)
	if err != nil {
		return nil, err
	}
	m := &metricTables{known: map[string]metricTable{}}
	for _, t := range tables {
		m.known[t] = metricTable{cols: cols[t], comment: comments[t]}
	}
	return m, nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
