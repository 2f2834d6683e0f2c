package macros

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Context is what the macros expand from.
type Context struct {
	From, To time.Time
	Interval time.Duration
	Run      string
	Ranks    []int
}

var (
	// A macro with arguments: the name, then a balanced argument list is
	// read by hand (arguments may hold parentheses).
	callRE = regexp.MustCompile(`\$__(timeFilter|timeGroup|timeFrom|timeTo)\s*\(`)
	// Macros without arguments; longer names first so $__interval_ns wins.
	bareRE = regexp.MustCompile(`\$__(interval_ns|interval_ms|interval|timeFrom|timeTo|run|ranks)\b`)
)

// Expand replaces every macro in sql. An unknown $__name is left alone
// (Grafana variables are the frontend's business); a macro with the wrong
// arguments is an error that names it.
func Expand(sql string, c Context) (string, error) {
	out, err := expandCalls(sql, c)
	if err != nil {
		return "", err
	}
	var bareErr error
	out = bareRE.ReplaceAllStringFunc(out, func(m string) string {
		switch m[3:] {
		case "interval":
			return intervalLiteral(c.Interval)
		case "interval_ns":
			return strconv.FormatInt(c.Interval.Nanoseconds(), 10)
		case "interval_ms":
			return strconv.FormatInt(c.Interval.Milliseconds(), 10)
		case "timeFrom":
			return strconv.FormatInt(c.From.UnixNano(), 10)
		case "timeTo":
			return strconv.FormatInt(c.To.UnixNano(), 10)
		case "run":
			if c.Run == "" {
				bareErr = fmt.Errorf("$__run: no run chosen for this query (pick one in the query editor or set the run variable)")
			}
			return Quote(c.Run)
		case "ranks":
			return rankList(c.Ranks)
		}
		return m
	})
	return out, bareErr
}

func expandCalls(sql string, c Context) (string, error) {
	var b strings.Builder
	for {
		loc := callRE.FindStringSubmatchIndex(sql)
		if loc == nil {
			b.WriteString(sql)
			return b.String(), nil
		}
		name := sql[loc[2]:loc[3]]
		args, end, err := readArgs(sql, loc[1])
		if err != nil {
			return "", fmt.Errorf("$__%s: %w", name, err)
		}
		rep, err := expandCall(name, args, c)
		if err != nil {
			return "", fmt.Errorf("$__%s: %w", name, err)
		}
		b.WriteString(sql[:loc[0]])
		b.WriteString(rep)
		sql = sql[end:]
	}
}

func expandCall(name string, args []string, c Context) (string, error) {
	switch name {
	case "timeFrom", "timeTo":
		if len(args) != 0 {
			return "", fmt.Errorf("takes no arguments, got %d", len(args))
		}
		if name == "timeFrom" {
			return strconv.FormatInt(c.From.UnixNano(), 10), nil
		}
		return strconv.FormatInt(c.To.UnixNano(), 10), nil
	case "timeFilter":
		if len(args) != 1 {
			return "", fmt.Errorf("takes one column (BIGINT ns since the epoch), got %d arguments", len(args))
		}
		return fmt.Sprintf("%s BETWEEN %d AND %d", args[0], c.From.UnixNano(), c.To.UnixNano()), nil
	case "timeGroup":
		if len(args) != 2 {
			return "", fmt.Errorf("takes a column and an interval, e.g. $__timeGroup(ts, $__interval), got %d arguments", len(args))
		}
		d, err := parseInterval(args[1], c.Interval)
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("time_bucket(%s, make_timestamp_ns(%s))", intervalLiteral(d), args[0]), nil
	}
	return "", fmt.Errorf("unknown macro")
}

// readArgs reads a comma-separated argument list that starts after an
// opening parenthesis at i, honouring nested parentheses and quotes, and
// returns the trimmed arguments and the index after the closing one.
func readArgs(s string, i int) ([]string, int, error) {
	var args []string
	depth, start := 0, i
	for j := i; j < len(s); j++ {
		switch s[j] {
		case '\'', '"':
			q := s[j]
			for j++; j < len(s) && s[j] != q; j++ {
			}
			if j >= len(s) {
				return nil, 0, fmt.Errorf("unterminated quote in arguments")
			}
		case '(':
			depth++
		case ')':
			if depth == 0 {
				if a := strings.TrimSpace(s[start:j]); a != "" || len(args) > 0 {
					args = append(args, a)
				}
				return args, j + 1, nil
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(s[start:j]))
				start = j + 1
			}
		}
	}
	return nil, 0, fmt.Errorf("missing closing parenthesis")
}

// parseInterval reads $__interval (already the panel's), a Go or Grafana
// duration (10s, 5m, 1h, 1d, 250ms), optionally quoted, or an INTERVAL
// literal as $__interval expands to.
func parseInterval(arg string, panel time.Duration) (time.Duration, error) {
	a := strings.TrimSpace(arg)
	if a == "$__interval" {
		return positive(panel)
	}
	if m := intervalLitRE.FindStringSubmatch(a); m != nil {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		return positive(time.Duration(n) * time.Microsecond)
	}
	a = strings.Trim(a, `'"`)
	if strings.HasSuffix(a, "d") {
		n, err := strconv.Atoi(strings.TrimSuffix(a, "d"))
		if err == nil {
			return positive(time.Duration(n) * 24 * time.Hour)
		}
	}
	if strings.HasSuffix(a, "w") {
		n, err := strconv.Atoi(strings.TrimSuffix(a, "w"))
		if err == nil {
			return positive(time.Duration(n) * 7 * 24 * time.Hour)
		}
	}
	d, err := time.ParseDuration(a)
	if err != nil {
		return 0, fmt.Errorf("interval %q: want $__interval or a duration such as 10s, 5m, 1h, 1d", arg)
	}
	return positive(d)
}

var intervalLitRE = regexp.MustCompile(`^INTERVAL '(\d+) microseconds'$`)

func positive(d time.Duration) (time.Duration, error) {
	if d <= 0 {
		return 0, fmt.Errorf("interval must be positive, got %s", d)
	}
	return d, nil
}

// intervalLiteral writes d as a DuckDB INTERVAL in microseconds (DuckDB's
// INTERVAL resolution); below 1 us it rounds up so buckets never vanish.
func intervalLiteral(d time.Duration) string {
	us := d.Microseconds()
	if us < 1 {
		us = 1
	}
	return fmt.Sprintf("INTERVAL '%d microseconds'", us)
}

// Quote writes s as a SQL string literal.
func Quote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

func rankList(ranks []int) string {
	if len(ranks) == 0 {
		// Every rank the store knows; findings without a rank need
		// "rank IS NULL OR rank IN $__ranks".
		return "(SELECT rank FROM ranks)"
	}
	parts := make([]string, len(ranks))
	for i, r := range ranks {
		parts[i] = strconv.Itoa(r)
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
