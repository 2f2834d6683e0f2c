package flightsrv

import (
	"context"
	"fmt"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// The catalog calls let generic clients (ADBC's GetObjects, DBeaver, the
// Grafana query editor) browse databases, schemas, tables and views. They
// run fixed queries of ours, so they skip the read-only check.

func (s *Server) registerSqlInfo(ctx context.Context) error {
	rows, err := s.queryStrings(ctx, "SELECT version()")
	if err != nil {
		return fmt.Errorf("flight sql: %w", err)
	}
	for id, v := range map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:          "trainscope",
		flightsql.SqlInfoFlightSqlServerVersion:       "DuckDB " + rows[0][0],
		flightsql.SqlInfoFlightSqlServerArrowVersion:  "18",
		flightsql.SqlInfoFlightSqlServerReadOnly:      true,
		flightsql.SqlInfoFlightSqlServerSql:           true,
		flightsql.SqlInfoFlightSqlServerSubstrait:     false,
		flightsql.SqlInfoFlightSqlServerTransaction:   int32(flightsql.SqlTransactionNone),
		flightsql.SqlInfoFlightSqlServerCancel:        false,
		flightsql.SqlInfoFlightSqlServerBulkIngestion: false,
		flightsql.SqlInfoDDLCatalog:                   false,
		flightsql.SqlInfoDDLSchema:                    false,
		flightsql.SqlInfoDDLTable:                     false,
		flightsql.SqlInfoIdentifierQuoteChar:          `"`,
		flightsql.SqlInfoTransactionsSupported:        false,
	} {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) infoFor(desc *flight.FlightDescriptor, sc *arrow.Schema) *flight.FlightInfo {
	return &flight.FlightInfo{
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: desc.Cmd}}},
		FlightDescriptor: desc,
		Schema:           flight.SerializeSchema(sc, s.Alloc),
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

func (s *Server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(desc, schema_ref.Catalogs), nil
}

func (s *Server) DoGetCatalogs(ctx context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rows, err := s.queryStrings(ctx, "SELECT database_name FROM duckdb_databases() WHERE NOT internal ORDER BY 1")
	if err != nil {
		return nil, nil, err
	}
	return s.send(schema_ref.Catalogs, rows)
}

func (s *Server) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(desc, schema_ref.DBSchemas), nil
}

func (s *Server) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rows, err := s.queryStrings(ctx, `SELECT s.database_name, s.schema_name FROM duckdb_schemas() s
		JOIN duckdb_databases() d USING (database_name)
		WHERE NOT d.internal AND s.schema_name NOT IN ('information_schema', 'pg_catalog')
		ORDER BY 1, 2`)
	if err != nil {
		return nil, nil, err
	}
	var out [][]string
	for _, r := range rows {
		if matchExact(cmd.GetCatalog(), r[0]) && matchLike(cmd.GetDBSchemaFilterPattern(), r[1]) {
			out = append(out, r)
		}
	}
	return s.send(schema_ref.DBSchemas, out)
}

func (s *Server) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return s.infoFor(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return s.infoFor(desc, schema_ref.Tables), nil
}

func (s *Server) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	rows, err := s.queryStrings(ctx, `SELECT database_name, schema_name, table_name, 'TABLE' FROM duckdb_tables() WHERE NOT internal
		UNION ALL
		SELECT database_name, schema_name, view_name, 'VIEW' FROM duckdb_views() WHERE NOT internal
		ORDER BY 1, 2, 3, 4`)
	if err != nil {
		return nil, nil, err
	}
	types := map[string]bool{}
	for _, t := range cmd.GetTableTypes() {
		types[strings.ToUpper(t)] = true
	}
	var out [][]string
	for _, r := range rows {
		if matchExact(cmd.GetCatalog(), r[0]) && matchLike(cmd.GetDBSchemaFilterPattern(), r[1]) &&
			matchLike(cmd.GetTableNameFilterPattern(), r[2]) && (len(types) == 0 || types[r[3]]) {
			out = append(out, r)
		}
	}
	if !cmd.GetIncludeSchema() {
		return s.send(schema_ref.Tables, out)
	}
	// The table's Arrow schema is DuckDB's own conversion of an empty
	// result, so it matches what a query on the table returns.
	for i, r := range out {
		q := fmt.Sprintf("SELECT * FROM %s.%s.%s LIMIT 0", quoteIdent(r[0]), quoteIdent(r[1]), quoteIdent(r[2]))
		sc, err := s.querySchema(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		out[i] = append(r, string(flight.SerializeSchema(sc, s.Alloc)))
	}
	return s.send(schema_ref.TablesWithIncludedSchema, out)
}

func (s *Server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return s.infoFor(desc, schema_ref.TableTypes), nil
}

func (s *Server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.send(schema_ref.TableTypes, [][]string{{"TABLE"}, {"VIEW"}})
}

// queryStrings runs one of our catalog queries on its own Reader and
// returns every value as a string.
func (s *Server) queryStrings(ctx context.Context, q string) ([][]string, error) {
	r, err := s.st.NewReader(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "%v", err)
	}
	defer r.Close()
	rdr, err := r.QueryArrow(ctx, q)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "catalog query: %v", err)
	}
	defer rdr.Release()
	var out [][]string
	for rdr.Next() {
		rec := rdr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]string, rec.NumCols())
			for c := range row {
				if col := rec.Column(c); !col.IsNull(i) {
					// Arrow strings alias the record's buffers, which
					// DuckDB frees on release: copy.
					row[c] = strings.Clone(col.ValueStr(i))
				}
			}
			out = append(out, row)
		}
	}
	if err := rdr.Err(); err != nil {
		return nil, status.Errorf(codes.Internal, "catalog query: %v", err)
	}
	return out, nil
}

func (s *Server) querySchema(ctx context.Context, q string) (*arrow.Schema, error) {
	r, err := s.st.NewReader(ctx)
	if err != nil {
		return nil, status.Errorf(codes.Unavailable, "%v", err)
	}
	defer r.Close()
	rdr, err := r.QueryArrow(ctx, q)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "table schema: %v", err)
	}
	defer rdr.Release()
	return rdr.Schema(), nil
}

// send builds one record of sc from rows (utf8 columns, and binary ones
// for serialized schemas) and returns it as a finished stream.
func (s *Server) send(sc *arrow.Schema, rows [][]string) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(s.Alloc, sc)
	defer b.Release()
	for _, r := range rows {
		for c := range sc.Fields() {
			switch fb := b.Field(c).(type) {
			case *array.StringBuilder:
				fb.Append(r[c])
			case *array.BinaryBuilder:
				fb.Append([]byte(r[c]))
			default:
				return nil, nil, status.Errorf(codes.Internal, "catalog column %s: unexpected builder %T", sc.Field(c).Name, fb)
			}
		}
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
	close(ch)
	return sc, ch, nil
}

func matchExact(want *string, v string) bool { return want == nil || *want == v }

// matchLike applies a Flight SQL filter pattern: SQL LIKE syntax, % any
// run of characters, _ any one, a backslash escapes either.
func matchLike(pattern *string, v string) bool {
	if pattern == nil {
		return true
	}
	var re strings.Builder
	re.WriteString("(?s)^")
	p := *pattern
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case c == '\\' && i+1 < len(p):
			i++
			re.WriteString(regexp.QuoteMeta(p[i : i+1]))
		case c == '%':
			re.WriteString(".*")
		case c == '_':
			re.WriteString(".")
		default:
			re.WriteString(regexp.QuoteMeta(p[i : i+1]))
		}
	}
	re.WriteString("$")
	ok, err := regexp.MatchString(re.String(), v)
	return err == nil && ok
}

func quoteIdent(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
