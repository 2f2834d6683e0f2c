package ruletest

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// tables2 reads the tables: key, table -> rows. A table's rows are a list
// of mappings (column: value), or a mapping with defaults (values every
// row gets unless it gives its own), columns (the order of the values of
// rows given as lists) and rows. Rows that give no run_id get run; rows of
// a table whose host may not be null and that give none get their rank's
// host from the ranks rows (ranks tracks them); a slice's cat defaults to
// its kind.
func (s *Suite) tables2(l *loader, n *yaml.Node, run string, ranks map[string]string) []Rows {
	m, ok := l.mapping(n, "tables")
	if !ok {
		return nil
	}
	// ranks first, so that the others may take their hosts from it
	order := make([]string, 0, len(m.keys))
	for _, k := range m.keys {
		if k == "ranks" {
			order = append([]string{k}, order...)
		} else {
			order = append(order, k)
		}
	}
	var out []Rows
	for _, tn := range order {
		key := m.fields[tn].key
		t := s.tables[tn]
		if t == nil {
			if why, ok := refused[tn]; ok {
				l.fail(key, "rows cannot be given for %s: %s", tn, why)
			} else {
				l.fail(key, "no table named %q (tables: %s)", tn, s.tableNames())
			}
			continue
		}
		rs := Rows{Table: tn, Line: key.Line}
		var defaults, columns []*yaml.Node
		var rows []*yaml.Node
		v := m.get(tn)
		switch v.Kind {
		case yaml.SequenceNode:
			rows, _ = l.sequence(v, tn)
		case yaml.MappingNode:
			tm, _ := l.mapping(v, "table "+tn, "defaults", "columns", "rows")
			if d := tm.get("defaults"); d != nil {
				dm, ok := l.mapping(d, tn+" defaults")
				if ok {
					defaults = dm.node.Content
				}
			}
			if c := tm.get("columns"); c != nil {
				columns, _ = l.sequence(c, tn+" columns")
			}
			if r := tm.get("rows"); r != nil {
				rows, _ = l.sequence(r, tn+" rows")
			} else {
				l.fail(v, "table %s: missing rows", tn)
			}
		default:
			l.fail(v, "table %s: give a list of rows, or defaults, columns and rows", tn)
			continue
		}
		for _, r := range rows {
			row, ok := s.row(l, t, r, defaults, columns, run, ranks)
			if ok {
				rs.Rows = append(rs.Rows, row)
			}
		}
		out = append(out, rs)
	}
	return out
}

// row reads one row: a mapping, or a list of values for columns.
func (s *Suite) row(l *loader, t *table, n *yaml.Node, defaults, columns []*yaml.Node, run string, ranks map[string]string) (Row, bool) {
	row := Row{Line: n.Line}
	set := map[string]*yaml.Node{}
	var keys []*yaml.Node
	switch n.Kind {
	case yaml.MappingNode:
		m, ok := l.mapping(n, "a row of "+t.name)
		if !ok {
			return row, false
		}
		for _, k := range m.keys {
			set[k] = m.get(k)
			keys = append(keys, m.fields[k].key)
		}
	case yaml.SequenceNode:
		if columns == nil {
			l.fail(n, "a row of %s given as a list needs the table's columns", t.name)
			return row, false
		}
		if len(n.Content) != len(columns) {
			l.fail(n, "a row of %s has %d values for %d columns", t.name, len(n.Content), len(columns))
			return row, false
		}
		for i, c := range columns {
			set[c.Value] = deref(n.Content[i])
			keys = append(keys, c)
		}
	default:
		l.fail(n, "a row of %s must be a mapping (column: value) or a list of values", t.name)
		return row, false
	}
	for i := 0; i+1 < len(defaults); i += 2 {
		if _, ok := set[defaults[i].Value]; !ok {
			set[defaults[i].Value] = deref(defaults[i+1])
			keys = append(keys, defaults[i])
		}
	}
	good := true
	vals := map[string]any{}
	for _, k := range keys {
		ci, ok := t.byName[k.Value]
		if !ok {
			l.fail(k, "table %s has no column %q (columns: %s)", t.name, k.Value, t.columnNames())
			good = false
			continue
		}
		v, err := convert(t.cols[ci], set[k.Value])
		if err != nil {
			l.fail(set[k.Value], "%s.%s: %v", t.name, k.Value, err)
			good = false
			continue
		}
		vals[k.Value] = v
	}
	if _, ok := t.byName["run_id"]; ok && vals["run_id"] == nil {
		vals["run_id"] = run
	}
	if _, ok := t.byName["host"]; ok && vals["host"] == nil && t.cols[t.byName["host"]].notNull {
		if r, ok := vals["rank"].(int64); ok {
			if h, ok := ranks[fmt.Sprint(vals["run_id"], "/", r)]; ok {
				vals["host"] = h
			}
		}
	}
	if _, ok := t.byName["cat"]; ok && vals["cat"] == nil && strings.HasPrefix(t.name, slicesTable) {
		vals["cat"] = vals["kind"] // the trace's category: mostly the kind
	}
	for _, c := range t.cols {
		if c.notNull && vals[c.name] == nil && good {
			l.fail(n, "a row of %s needs %s (it may not be null; give it in the row or the table's defaults)", t.name, c.name)
			good = false
		}
	}
	if !good {
		return row, false
	}
	for _, c := range t.cols {
		if v, ok := vals[c.name]; ok {
			row.Cols = append(row.Cols, c.name)
			row.Vals = append(row.Vals, v)
		}
	}
	if t.name == "ranks" {
		if h, ok := vals["host"].(string); ok {
			ranks[fmt.Sprint(vals["run_id"], "/", vals["rank"])] = h
		}
	}
	return row, true
}

func (t *table) columnNames() string {
	n := make([]string, len(t.cols))
	for i, c := range t.cols {
		n[i] = c.name
	}
	return strings.Join(n, ", ")
}

// convert turns a YAML value into what c holds.
func convert(c column, n *yaml.Node) (any, error) {
	if isNull(n) {
		return nil, nil
	}
	typ := strings.ToUpper(c.typ)
	if strings.HasSuffix(typ, "[]") {
		if n.Kind != yaml.SequenceNode {
			return nil, fmt.Errorf("%s is a list (%s): give [a, b, ...]", c.name, c.typ)
		}
		elem := column{name: c.name + "[]", typ: strings.TrimSuffix(typ, "[]")}
		var items []any
		for _, it := range n.Content {
			v, err := convert(elem, deref(it))
			if err != nil {
				return nil, err
			}
			items = append(items, v)
		}
		b, err := json.Marshal(items)
		if err != nil {
			return nil, err
		}
		return jsonList{json: string(b), typ: c.typ}, nil
	}
	if n.Kind != yaml.ScalarNode {
		return nil, fmt.Errorf("%s (%s) takes one value, not a %s", c.name, c.typ, kindName(n.Kind))
	}
	switch {
	case isInt(typ):
		v, err := parseNumber(n)
		if err != nil {
			return nil, err
		}
		if v != math.Trunc(v) || math.Abs(v) > 1<<62 {
			return nil, fmt.Errorf("%s (%s) is a whole number, got %s", c.name, c.typ, n.Value)
		}
		if n.ShortTag() == "!!int" {
			if i, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); err == nil {
				return i, nil
			}
		}
		return int64(v), nil
	case typ == "DOUBLE" || typ == "FLOAT" || typ == "REAL" || strings.HasPrefix(typ, "DECIMAL"):
		return parseNumber(n)
	case typ == "BOOLEAN":
		if n.ShortTag() != "!!bool" {
			return nil, fmt.Errorf("%s is true or false, got %q", c.name, n.Value)
		}
		return strings.EqualFold(n.Value, "true"), nil
	}
	return n.Value, nil // VARCHAR, and whatever DuckDB casts from text
}

// jsonList is a list value, inserted through DuckDB's JSON cast.
type jsonList struct{ json, typ string }

func isInt(typ string) bool {
	switch typ {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT":
		return true
	}
	return false
}

func kindName(k yaml.Kind) string {
	switch k {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	}
	return "value"
}
