package mdfmt

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Duration formats nanoseconds with a unit: ns, us, ms or s.
func Duration(ns float64) string {
	a := math.Abs(ns)
	switch {
	case a >= 1e9:
		return fmt.Sprintf("%.3f s", ns/1e9)
	case a >= 1e6:
		return fmt.Sprintf("%.3f ms", ns/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.1f us", ns/1e3)
	}
	return fmt.Sprintf("%.0f ns", ns)
}

// Bytes formats a byte count with a binary unit.
func Bytes(n float64) string {
	a := math.Abs(n)
	switch {
	case a >= 1<<30:
		return fmt.Sprintf("%.2f GiB", n/(1<<30))
	case a >= 1<<20:
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case a >= 1<<10:
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f B", n)
}

// Signed is a duration with its sign: +1.2 ms, -300 ns.
func Signed(ns float64) string {
	if ns >= 0 {
		return "+" + Duration(ns)
	}
	return Duration(ns)
}

// Round keeps four decimals (NaN and infinities become 0), so reports
// compare across machines.
func Round(f float64) float64 {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0
	}
	return math.Round(f*1e4) / 1e4
}

// RankRanges writes sorted ranks compactly: 0-7, 12, 14-15.
func RankRanges(ranks []int) string {
	var parts []string
	for i := 0; i < len(ranks); {
		j := i
		for j+1 < len(ranks) && ranks[j+1] == ranks[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ranks[i], ranks[j]))
		} else {
			parts = append(parts, strconv.Itoa(ranks[i]))
		}
		i = j + 1
	}
	return strings.Join(parts, ", ")
}

const maxCell = 80

// Table writes a markdown table: a header of cols and one line per row,
// each value formatted by Cell.
func Table(b *strings.Builder, cols []string, rows [][]any) {
	b.WriteString("|")
	for _, c := range cols {
		fmt.Fprintf(b, " %s |", c)
	}
	b.WriteString("\n|")
	for range cols {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, row := range rows {
		b.WriteString("|")
		for i, v := range row {
			fmt.Fprintf(b, " %s |", Cell(cols[i], v))
		}
		b.WriteString("\n")
	}
}

// shorten cuts text to maxCell characters. A call stack ("kind a > b >
// c") keeps its kind and its innermost frames, the ones that tell stacks
// apart; other text keeps its beginning.
func shorten(s string) string {
	r := []rune(s)
	if len(r) <= maxCell {
		return s
	}
	if kind, path, ok := strings.Cut(s, " "); ok && strings.Contains(path, " > ") && len([]rune(kind)) < maxCell/4 {
		// drop whole frames from the root end while it does not fit
		frames := strings.Split(strings.TrimPrefix(path, "… > "), " > ")
		for len(frames) > 1 {
			frames = frames[1:]
			out := kind + " … > " + strings.Join(frames, " > ")
			if len([]rune(out)) <= maxCell {
				return out
			}
		}
		// one frame too long by itself: keep its end
		head := []rune(kind + " …")
		return string(head) + string(r[len(r)-(maxCell-len(head)):])
	}
	return string(r[:maxCell-1]) + "…"
}

// Cell formats one value: durations (columns ending in _ns) in readable
// units, shares with two decimals, text escaped and shortened.
func Cell(col string, v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		s := strings.ReplaceAll(x, "|", `\|`)
		s = shorten(s)
		return "`" + strings.ReplaceAll(s, "`", "'") + "`"
	case int64:
		return Cell(col, float64(x))
	case float64:
		switch {
		case strings.HasSuffix(col, "_ns"):
			return Duration(x)
		case strings.HasSuffix(col, "_bytes"):
			return Bytes(x)
		}
		return Float(x)
	}
	return fmt.Sprint(v)
}

// Float writes a whole number without decimals, others with two.
func Float(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 2, 64)
}

// ShortKernel is a kernel name without its return type, template and
// parameter lists, at most 60 characters (the tooltip has it in full).
func ShortKernel(name string) string {
	n := strings.ReplaceAll(strings.TrimPrefix(name, "void "), "(anonymous namespace)::", "")
	if i := strings.IndexAny(n, "<("); i > 0 {
		n = n[:i]
	}
	if r := []rune(n); len(r) > 60 {
		n = string(r[:59]) + "…"
	}
	return n
}

// UpperFirst is s with its first byte upper-cased: a cause's headline as
// the first words of a sentence.
func UpperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
