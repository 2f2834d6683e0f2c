package detectors

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

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

// storeTable adds _detector_out's rows to d's table (Run has cleared their runs),
// creating the table from the output's columns where it is missing and
// again where the detector's columns changed since it was made (a new
// version, or an edited user detector): the table then starts over with
// this pass's runs, while metrics keeps the numbers of the others.
func (d *Detector) storeTable(ctx context.Context, st *duck.Store, cols []*sql.ColumnType) error {
	table := metricTableName(d.Name)
	want := d.metricColumns(cols)
	have, comment, err := tableColumns(ctx, st, table)
	if err != nil {
		return err
	}
	same := len(have) == len(want)
	for i := 0; same && i < len(want); i++ {
		same = have[i] == [2]string{want[i].name, want[i].typ}
	}
	var stmts []string
	if !same {
		defs := make([]string, len(want))
		for i, c := range want {
			defs[i] = quoteIdent(c.name) + " " + c.typ
		}
		stmts = append(stmts, "DROP TABLE IF EXISTS "+table, fmt.Sprintf("CREATE TABLE %s (%s)", table, strings.Join(defs, ", ")))
	}
	if !same || comment != d.Description {
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
	// one transaction: one commit instead of one per statement
	if err := st.Tx(ctx, func() error { return st.Exec(ctx, strings.Join(stmts, ";\n")) }); err != nil {
		return fmt.Errorf("store %s: %w", table, err)
	}
	return nil
}

// tableColumns are the (name, type) columns of main's table, in order, and
// its comment; none when there is no such table. (duckdb_columns() would
// bind every view of the schema to list theirs: ~40 ms a call.)
func tableColumns(ctx context.Context, st *duck.Store, table string) ([][2]string, string, error) {
	var comment sql.NullString
	err := st.Conn().QueryRowContext(ctx, `SELECT comment FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND table_name = ? AND NOT temporary`, table).Scan(&comment)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, "", nil
	}
	if err != nil {
		return nil, "", err
	}
	rows, err := st.Query(ctx, "SELECT name, type FROM pragma_table_info("+duck.Literal("main."+table)+") ORDER BY cid")
	if err != nil {
		return nil, "", err
	}
	defer rows.Close()
	var out [][2]string
	for rows.Next() {
		var n, t string
		if err := rows.Scan(&n, &t); err != nil {
			return nil, "", err
		}
		out = append(out, [2]string{n, t})
	}
	return out, comment.String, rows.Err()
}

// clearMetricTables deletes the rows of the database's runs from every
// metric table, as Run does from metrics: a metric detector that fails
// this pass must not leave a finding the rows of the last one.
func clearMetricTables(ctx context.Context, st *duck.Store) error {
	rows, err := st.Query(ctx, `SELECT table_name FROM duckdb_tables()
WHERE database_name = current_database() AND schema_name = 'main' AND NOT temporary AND starts_with(table_name, ?)
ORDER BY 1`, MetricTablePrefix)
	if err != nil {
		return err
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return err
		}
		tables = append(tables, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, t := range tables {
		if err := st.Exec(ctx, "DELETE FROM "+quoteIdent(t)+" WHERE run_id IN (SELECT run_id FROM ranks)"); err != nil {
			return fmt.Errorf("clear %s: %w", t, err)
		}
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
