package macros

import (
	"strings"
	"testing"
	"time"
)

func TestExpand(t *testing.T) {
	from := time.Unix(0, 1682725898000000000).UTC()
	to := time.Unix(0, 1682725899000000000).UTC()
	c := Context{From: from, To: to, Interval: 30 * time.Second, Run: "o'neil", Ranks: []int{0, 3}}
	for _, tc := range []struct{ in, want string }{
		{"WHERE $__timeFilter(ts)", "WHERE ts BETWEEN 1682725898000000000 AND 1682725899000000000"},
		{"WHERE $__timeFilter( s.start_ns )", "WHERE s.start_ns BETWEEN 1682725898000000000 AND 1682725899000000000"},
		{"$__timeFrom() .. $__timeTo()", "1682725898000000000 .. 1682725899000000000"},
		{"$__timeFrom .. $__timeTo", "1682725898000000000 .. 1682725899000000000"},
		{"$__timeGroup(ts, $__interval)", "time_bucket(INTERVAL '30000000 microseconds', make_timestamp_ns(ts))"},
		{"$__timeGroup(coalesce(a, b), '5m')", "time_bucket(INTERVAL '300000000 microseconds', make_timestamp_ns(coalesce(a, b)))"},
		{"$__timeGroup(ts, 1d)", "time_bucket(INTERVAL '86400000000 microseconds', make_timestamp_ns(ts))"},
		{"$__timeGroup(ts, 250ms)", "time_bucket(INTERVAL '250000 microseconds', make_timestamp_ns(ts))"},
		{"$__interval / $__interval_ns / $__interval_ms", "INTERVAL '30000000 microseconds' / 30000000000 / 30000"},
		{"run_id = $__run AND rank IN $__ranks", "run_id = 'o''neil' AND rank IN (0, 3)"},
		{"$__unknown and $var stay", "$__unknown and $var stay"},
		{"'$__timeFilter(x)' is text too", "'x BETWEEN 1682725898000000000 AND 1682725899000000000' is text too"},
	} {
		got, err := Expand(tc.in, c)
		if err != nil || got != tc.want {
			t.Errorf("Expand(%q) = %q, %v\nwant %q", tc.in, got, err, tc.want)
		}
	}
}

func TestExpandAllRanks(t *testing.T) {
	got, err := Expand("rank IN $__ranks", Context{Run: "r"})
	if err != nil || got != "rank IN (SELECT rank FROM ranks)" {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestExpandErrors(t *testing.T) {
	for in, want := range map[string]string{
		"$__timeFilter()":               "$__timeFilter: takes one column",
		"$__timeFilter(a, b)":           "$__timeFilter: takes one column",
		"$__timeGroup(ts)":              "$__timeGroup: takes a column and an interval",
		"$__timeGroup(ts, soon)":        `interval "soon"`,
		"$__timeGroup(ts, 0s)":          "interval must be positive",
		"$__timeFilter(ts":              "missing closing parenthesis",
		"$__timeFrom(x)":                "takes no arguments",
		"WHERE run_id = $__run":         "$__run: no run chosen",
		"$__timeGroup(ts, $__interval)": "interval must be positive",
	} {
		_, err := Expand(in, Context{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Expand(%q) error %v, want %q", in, err, want)
		}
	}
}

func TestQuote(t *testing.T) {
	if got := Quote("a'b"); got != "'a''b'" {
		t.Errorf("Quote = %s", got)
	}
}
