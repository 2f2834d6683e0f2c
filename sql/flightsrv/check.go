package flightsrv

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	// The parser database below is a plain database/sql DuckDB.
	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/trainscope/trainscope/sql/schema"
)

// RefusedError is a query the read-only contract does not allow. Reason
// says what was refused and why, e.g. "COPY reads and writes files on the
// server".
type RefusedError struct {
	Reason string
	// Server is the address that refused, on errors the client returns.
	Server string
}

func (e *RefusedError) Error() string {
	if e.Server != "" {
		return "server refused: " + e.Reason
	}
	return "refused: " + e.Reason + " (this server only runs read-only queries)"
}

func refuse(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// maxQueryBytes bounds what the parser is asked to read.
const maxQueryBytes = 1 << 20

// allowedKinds is what the contract lets through, for messages.
const allowedKinds = "SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW, SUMMARIZE, EXPLAIN"

// CheckReadOnly decides whether query may run on the server. It allows one
// SELECT-like statement that reads only the database, and returns a
// *RefusedError for anything else; a query DuckDB cannot parse gets a
// plain error with DuckDB's message. See doc.go for the rules.
func CheckReadOnly(query string) error {
	_, err := runnable(query, 0)
	return err
}

// runnable checks query and returns the text to run: query itself, except
// for EXPLAIN, which is rebuilt as "EXPLAIN [ANALYZE] " + the checked
// query, so that where the explained query starts is never a matter of
// this package's lexer agreeing with DuckDB's.
func runnable(query string, depth int) (string, error) {
	switch {
	case strings.TrimSpace(query) == "":
		return "", errors.New("empty query")
	case len(query) > maxQueryBytes:
		return "", refuse("a query of %d bytes (the limit is %d)", len(query), maxQueryBytes)
	case !utf8.ValidString(query):
		return "", refuse("a query that is not valid UTF-8")
	case strings.IndexByte(query, 0) >= 0:
		// DuckDB's C API would cut the text at the NUL; what runs must be
		// what was checked.
		return "", refuse("a query with a NUL byte")
	}
	toks, err := lex(query)
	if err != nil {
		return "", fmt.Errorf("cannot parse query: %v", err)
	}
	stmts := statements(toks)
	switch {
	case len(stmts) == 0:
		return "", errors.New("empty query (only comments)")
	case len(stmts) > 1:
		var kws []string
		for _, s := range stmts[:min(len(stmts), 4)] {
			kw, _ := leadingKeyword(s)
			kws = append(kws, kw)
		}
		if len(stmts) > 4 {
			kws = append(kws, "...")
		}
		return "", refuse("%d statements (%s): send one query at a time", len(stmts), strings.Join(kws, ", "))
	}
	stmt := stmts[0]
	kw, at := leadingKeyword(stmt)
	if kw == "EXPLAIN" && depth == 0 {
		// EXPLAIN [ANALYZE] <query> is as safe as <query>: check that.
		next := at + 1
		if next < len(stmt) && (stmt[next].upper() == "ANALYZE" || stmt[next].upper() == "ANALYSE") {
			next++
		}
		if next >= len(stmt) || at != 0 {
			return "", refuse("EXPLAIN without a query after it")
		}
		inner, err := runnable(query[stmt[next].pos:], depth+1)
		if err != nil {
			return "", err
		}
		return "EXPLAIN " + strings.Repeat("ANALYZE ", next-at-1) + inner, nil
	}
	if reason, ok := statementReasons[kw]; ok {
		return "", refuse("%s %s", kw, reason)
	}
	for _, name := range calledNames(stmt) {
		if reason := functionReason(name); reason != "" {
			return "", refuse("%s %s", name, reason)
		}
	}
	ast, err := parse(query)
	if err != nil {
		return "", err
	}
	if ast.Error {
		if ast.ErrorType == "parser" {
			return "", fmt.Errorf("cannot parse query: %s", clip(ast.ErrorMessage, 300))
		}
		return "", refuseStatement(kw, stmt)
	}
	if len(ast.Statements) != 1 {
		return "", refuse("%d statements: send one query at a time", len(ast.Statements))
	}
	if err := walk(ast.Statements[0]); err != nil {
		return "", err
	}
	return query, nil
}

// refuseStatement explains a statement DuckDB would not serialize, which
// means it is not a SELECT.
func refuseStatement(kw string, stmt []token) error {
	if kw == "WITH" {
		for _, k := range topLevelKeywords(stmt) {
			if reason, ok := statementReasons[k]; ok {
				return refuse("WITH ... %s %s", k, reason)
			}
		}
	}
	if kw == "PIVOT" {
		return refuse("PIVOT without an IN list creates types; list the values (PIVOT t ON col IN (...)) or write FROM t PIVOT (...)")
	}
	if kw == "" {
		kw = "this statement"
	}
	return refuse("%s is not a query (allowed: %s)", kw, allowedKinds)
}

// statementReasons are the leading keywords refused outright, and why.
var statementReasons = map[string]string{}

func init() {
	for _, r := range []struct {
		reason string
		kws    []string
	}{
		{"writes to the database", []string{"INSERT", "UPDATE", "DELETE", "TRUNCATE", "MERGE"}},
		{"changes the database schema", []string{"CREATE", "DROP", "ALTER", "COMMENT"}},
		{"opens another database file or URL", []string{"ATTACH"}},
		{"detaches a database for every connection", []string{"DETACH"}},
		{"changes the default database", []string{"USE"}},
		{"downloads and installs extensions", []string{"INSTALL"}},
		{"loads code into the server", []string{"LOAD"}},
		{"(FORCE INSTALL, FORCE CHECKPOINT) installs extensions or writes the database file", []string{"FORCE"}},
		{"reads and writes files on the server", []string{"COPY"}},
		{"writes files on the server", []string{"EXPORT"}},
		{"reads files on the server into the database", []string{"IMPORT"}},
		{"changes settings or runs functions with side effects (use the pragma_* and duckdb_* table functions in a SELECT)", []string{"PRAGMA"}},
		{"changes settings for every connection", []string{"SET", "RESET"}},
		{"runs table functions that may change state (use SELECT * FROM f(...))", []string{"CALL"}},
		{"controls transactions; each query runs in its own read snapshot", []string{"BEGIN", "START", "COMMIT", "ROLLBACK", "ABORT", "END", "SAVEPOINT", "RELEASE"}},
		{"writes the database file", []string{"CHECKPOINT", "VACUUM"}},
		{"rewrites table statistics", []string{"ANALYZE"}},
		{"is SQL-level statement preparation; use Flight SQL prepared statements", []string{"PREPARE", "EXECUTE", "DEALLOCATE"}},
	} {
		for _, kw := range r.kws {
			statementReasons[kw] = r.reason
		}
	}
}

// Table functions are refused unless listed here: the catalog-browsing
// functions, generators, and the table macros of our schema (added by
// loadParser). Everything else (read_*, glob, query, checkpoint, the
// functions of extensions loaded later...) could read files, run unchecked
// SQL or change state.
var allowedTableFuncs = map[string]bool{}

func init() {
	for _, f := range []string{
		"range", "generate_series", "unnest", "repeat", "repeat_row", "json_each", "json_tree",
		"duckdb_columns", "duckdb_constraints", "duckdb_databases", "duckdb_dependencies",
		"duckdb_extensions", "duckdb_functions", "duckdb_indexes", "duckdb_keywords",
		"duckdb_memory", "duckdb_optimizers", "duckdb_schemas", "duckdb_sequences",
		"duckdb_settings", "duckdb_tables", "duckdb_temporary_files", "duckdb_types", "duckdb_views",
		"pragma_table_info", "pragma_show", "pragma_database_size", "pragma_storage_info",
		"pragma_metadata_info", "pragma_version", "pragma_platform", "pragma_collations",
		"pragma_user_agent", "icu_calendar_names", "pg_timezone_names", "test_all_types",
	} {
		allowedTableFuncs[f] = true
	}
}

// functionReason says why a function may not be called, or "" if it may
// (as far as its name tells: table functions are also checked against
// allowedTableFuncs).
func functionReason(name string) string {
	name = strings.ToLower(name)
	switch name {
	case "getenv":
		return "reads the server's environment"
	case "nextval", "setval":
		return "advances a sequence (a write)"
	case "write_log":
		return "writes to the server's log"
	case "query", "query_table", "json_execute_serialized_sql":
		return "runs SQL built at run time, which this check cannot see"
	case "duckdb_secrets", "which_secret", "load_aws_credentials":
		return "exposes or loads credentials"
	case "checkpoint", "force_checkpoint", "enable_logging", "disable_logging", "truncate_duckdb_logs",
		"enable_profiling", "disable_profiling", "enable_peg_parser", "disable_peg_parser":
		return "changes the state of the server"
	case "glob", "sniff_csv", "st_read", "parquet_scan", "delta_scan", "arrow_scan":
		return "reads files or URLs on the server"
	}
	for _, p := range []string{"read_", "parquet_", "iceberg_", "delta_", "sqlite_", "postgres_", "mysql_", "odbc_", "ducklake_", "excel_", "vortex_", "lance_", "avro_"} {
		if strings.HasPrefix(name, p) {
			return "reads files, URLs or other databases"
		}
	}
	return ""
}

// tableNameReason refuses names DuckDB would resolve as a file or URL
// (a replacement scan: FROM 'runs.csv', FROM '/etc/passwd', FROM
// 's3://b/k'): our tables and views never contain these characters.
func tableNameReason(name string) string {
	if strings.ContainsAny(name, "./\\:*?~[]{}") {
		return fmt.Sprintf("%q would be read as a file or URL, not a table (only the database's tables and views may be read)", name)
	}
	return ""
}

// parsed is what json_serialize_sql returns.
type parsed struct {
	Error        bool   `json:"error"`
	ErrorType    string `json:"error_type"`
	ErrorMessage string `json:"error_message"`
	Statements   []any  `json:"statements"`
}

var parser struct {
	once sync.Once
	db   *sql.DB
	err  error
}

// What the parser database's catalog holds: DuckDB's built-in and bundled
// functions and types plus our schema's macros. A function or type that is
// not there would make DuckDB install and load an extension (this build
// autoloads, downloading from the network) instead of failing.
var (
	knownFuncs  map[string]bool
	knownTypes  map[string]bool
	tableMacros map[string]bool // these read query_table(arg): args must be names
)

// loadParser opens the in-memory database whose only job is to parse:
// json_serialize_sql runs DuckDB's own parser on a query given as a
// parameter and executes nothing, so no query can reach the served
// database through it. It applies our schema, then reads the catalog.
func loadParser() (*sql.DB, error) {
	parser.once.Do(func() {
		db, err := openParser()
		if err != nil {
			parser.err = err
			return
		}
		parser.db = db
	})
	return parser.db, parser.err
}

func openParser() (*sql.DB, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	var ok bool
	if err := db.QueryRowContext(ctx, "SELECT json_serialize_sql('SELECT 1'::VARCHAR)::VARCHAR IS NOT NULL").Scan(&ok); err != nil {
		db.Close()
		return nil, fmt.Errorf("json_serialize_sql is not available in this DuckDB build: %w", err)
	}
	for _, f := range schema.Files() {
		if _, err := db.ExecContext(ctx, f.SQL); err != nil {
			db.Close()
			return nil, fmt.Errorf("parser database: schema %s: %w", f.Name, err)
		}
	}
	sets := []*map[string]bool{&knownFuncs, &knownTypes, &tableMacros}
	for i, q := range []string{
		"SELECT DISTINCT lower(function_name) FROM duckdb_functions()",
		"SELECT DISTINCT lower(type_name) FROM duckdb_types()",
		"SELECT DISTINCT lower(function_name) FROM duckdb_functions() WHERE function_type = 'table_macro' AND NOT internal",
	} {
		set, err := nameSet(ctx, db, q)
		if err != nil {
			db.Close()
			return nil, fmt.Errorf("parser database: %w", err)
		}
		*sets[i] = set
	}
	return db, nil
}

func nameSet(ctx context.Context, db *sql.DB, q string) (map[string]bool, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	set := map[string]bool{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		set[name] = true
	}
	return set, rows.Err()
}

func parse(query string) (*parsed, error) {
	db, err := loadParser()
	if err != nil {
		// Without DuckDB's parser nothing is allowed: fail closed.
		return nil, fmt.Errorf("read-only check unavailable: %w", err)
	}
	var js string
	if err := db.QueryRow("SELECT json_serialize_sql(?::VARCHAR)::VARCHAR", query).Scan(&js); err != nil {
		return nil, fmt.Errorf("read-only check: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	var p parsed
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("read-only check: %w", err)
	}
	return &p, nil
}

// walk visits every node of a serialized statement and refuses the first
// one that reaches outside the database. It does not need to know every
// node type: tables, table functions, functions and type names are the
// only ways a SELECT reaches anything, and each is recognised by its own
// fields. Query text only ever lands in JSON values, never in keys, so no
// query can fake or hide a node.
func walk(n any) error {
	switch v := n.(type) {
	case []any:
		for _, e := range v {
			if err := walk(e); err != nil {
				return err
			}
		}
	case map[string]any:
		typ, _ := v["type"].(string)
		switch typ {
		case "BASE_TABLE":
			if reason := tableNameReason(str(v["table_name"])); reason != "" {
				return refuse("%s", reason)
			}
		case "SHOW_REF":
			// SHOW TABLES and friends name an internal target ("tables",
			// __show_tables_expanded); DESCRIBE x carries x as a query.
			if name := strings.Trim(str(v["table_name"]), `"`); name != "" {
				if reason := tableNameReason(name); reason != "" {
					return refuse("%s", reason)
				}
			}
		case "TABLE_FUNCTION":
			fn, _ := v["function"].(map[string]any)
			name := strings.ToLower(str(fn["function_name"]))
			if reason := functionReason(name); reason != "" {
				return refuse("%s %s", name, reason)
			}
			if tableMacros[name] {
				if err := checkMacroArgs(name, fn["children"]); err != nil {
					return err
				}
			} else if !allowedTableFuncs[name] {
				return refuse("table function %s is not allowed (allowed: generators such as range and unnest, the duckdb_* and pragma_* catalog functions, and the schema's table macros)", name)
			}
		}
		// Functions, aggregates and window functions all carry a name.
		if fn, ok := v["function_name"].(string); ok {
			name := strings.ToLower(fn)
			if reason := functionReason(name); reason != "" {
				return refuse("%s %s", name, reason)
			}
			if !knownFuncs[name] {
				return refuse("function %s is not built into this server; calling it would make DuckDB install an extension", name)
			}
		}
		if typ == "UNBOUND_TYPE_INFO" {
			if name := strings.ToLower(str(v["name"])); !knownTypes[name] {
				return refuse("type %s is not built into this server; using it would make DuckDB install an extension", name)
			}
		}
		// Visit children in a fixed order so the first refusal is stable.
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if err := walk(v[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkMacroArgs: a table macro reads query_table(arg), and query_table
// resolves a string like 'x.csv' as a file, so each argument must be the
// plain name of a table, view or CTE.
func checkMacroArgs(macro string, children any) error {
	args, _ := children.([]any)
	for _, a := range args {
		m, _ := a.(map[string]any)
		var name string
		switch str(m["class"]) {
		case "COLUMN_REF":
			parts, _ := m["column_names"].([]any)
			if len(parts) != 1 {
				return refuse("%s takes the name of a table, view or CTE, not a qualified name", macro)
			}
			name = str(parts[0])
		case "CONSTANT":
			val, _ := m["value"].(map[string]any)
			name = str(val["value"])
		default:
			return refuse("%s takes the name of a table, view or CTE, not an expression", macro)
		}
		if reason := tableNameReason(name); reason != "" {
			return refuse("%s: %s", macro, reason)
		}
	}
	return nil
}

// clip shortens DuckDB messages that quote a long query back.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func str(v any) string {
	s, _ := v.(string)
	return s
}
