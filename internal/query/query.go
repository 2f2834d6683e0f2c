package query

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/trainscope/trainscope/internal/cli"
	"github.com/trainscope/trainscope/sql/duck"
	"github.com/trainscope/trainscope/sql/flightsrv"
	"github.com/trainscope/trainscope/sql/rowfmt"
)

// Options are 'trainscope sql's flags: where the query runs (a database
// file, or a server's Flight SQL endpoint dialled with Dialer's token and
// TLS) and how the rows are printed.
type Options struct {
	DB, Server string
	Format     string // table, csv or json
	Dialer     flightsrv.Dialer
}

// Run runs the query that args make up ("-": read it from stdin) and
// prints its rows on out as they arrive: 'trainscope sql'.
func Run(ctx context.Context, args []string, o Options, out io.Writer) error {
	if (o.DB == "") == (o.Server == "") {
		return cli.Usage("sql: give exactly one of --db FILE (a database written by 'trainscope analyze --db FILE') or --server ADDR (a running 'trainscope serve')")
	}
	if len(args) == 0 {
		return cli.Usage("sql: give a query, or '-' to read it from stdin")
	}
	switch o.Format {
	case "table", "csv", "json":
	default:
		return cli.Usage(fmt.Sprintf("sql: --format %q: want table, csv or json", o.Format))
	}
	query := strings.Join(args, " ")
	if query == "-" {
		b, err := io.ReadAll(os.Stdin)
		if err != nil {
			return err
		}
		query = string(b)
	}
	if o.Server != "" {
		var w *rowfmt.Writer
		err := o.Dialer.Stream(ctx, o.Server, query, func(schema *arrow.Schema, rec arrow.RecordBatch) error {
			if w == nil {
				cols := make([]string, schema.NumFields())
				for i, f := range schema.Fields() {
					cols[i] = f.Name
				}
				w = rowfmt.NewWriter(cols, o.Format, out)
			}
			if rec == nil {
				return nil
			}
			for r := 0; r < int(rec.NumRows()); r++ {
				row := make([]any, rec.NumCols())
				for c := range row {
					row[c] = rowfmt.ArrowValue(rec.Column(c), r)
				}
				if err := w.Row(row); err != nil {
					return err
				}
			}
			return nil
		})
		if w != nil {
			// what arrived is printed, even when the server stopped early
			if cerr := w.Close(); err == nil {
				err = cerr
			}
		}
		if errors.Is(err, flightsrv.ErrNoServer) {
			return err // not the query's fault: exit 1
		}
		if err != nil {
			return cli.Input(err)
		}
		return nil
	}
	st, err := duck.Open(ctx, o.DB, duck.Options{ReadOnly: true})
	if err != nil {
		return cli.Input(err)
	}
	defer st.Close()
	rows, err := st.Query(ctx, query)
	if err != nil {
		return cli.Input(fmt.Errorf("query: %w", err))
	}
	defer rows.Close()
	return rowfmt.WriteSQL(rows, o.Format, out)
}
