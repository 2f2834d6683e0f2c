package script

import (
	"strings"
	"testing"
	"time"
)

// The seams between mvdan's parser and our evaluation: where bash and
// mvdan disagree, what a syntax error costs, and input built to exhaust
// the parser.

// TestArrayElementsBashReadsAsWords: [0]*3+[1]*5 in an array is a word to
// bash (it is not [index]=value); mvdan refuses it, so the parser is shown
// a stand-in and the flag keeps the text as written.
func TestArrayElementsBashReadsAsWords(t *testing.T) {
	s := parseT(t, `N=8
ARGS=(
   --moe-layer-freq [0]*2+[1]*$((N - 2))
   --pattern [ab]x
   --lr 1e-6
)
python3 train.py "${ARGS[@]}"
`, Options{})
	if len(s.Problems) != 0 {
		t.Fatalf("problems: %v", s.Problems)
	}
	for _, c := range []struct{ flag, value, raw string }{
		{"--moe-layer-freq", "[0]*2+[1]*6", "--moe-layer-freq [0]*2+[1]*$((N - 2))"},
		{"--pattern", "[ab]x", "--pattern [ab]x"},
		{"--lr", "1e-6", "--lr 1e-6"},
	} {
		f := only(t, s, c.flag)
		if f.Value != c.value || f.Raw != c.raw || f.Array != "ARGS" {
			t.Errorf("%s: value %q raw %q array %q; want %q %q ARGS", c.flag, f.Value, f.Raw, f.Array, c.value, c.raw)
		}
	}
}

// TestSyntaxErrorLosesOneStatement: a line mvdan cannot read is a problem
// at its line; what comes before and after it is still read.
func TestSyntaxErrorLosesOneStatement(t *testing.T) {
	for _, tc := range []struct {
		name, bad, problem string
	}{
		{"stray paren", "echo a )", "/job/run.sh:2: syntax error: "},
		{"stray fi", "fi", "/job/run.sh:2: syntax error: "},
		{"case op outside case", "x ;; y", "/job/run.sh:2: syntax error: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := parseT(t, "python3 a.py --before 1\n"+tc.bad+"\npython3 b.py --after 2\n", Options{})
			if len(s.Problems) != 1 || !strings.HasPrefix(s.Problems[0].Error(), tc.problem) ||
				!strings.HasSuffix(s.Problems[0].Msg, "reading resumes on the next line") {
				t.Fatalf("problems: %q", s.Problems)
			}
			if only(t, s, "--before").Value != "1" || only(t, s, "--after").Value != "2" {
				t.Error("flags around the bad line are lost")
			}
			if f := only(t, s, "--after"); f.Line != 3 {
				t.Errorf("--after on line %d, want 3", f.Line)
			}
		})
	}
}

// TestHostileNestingIsBounded: mvdan's parser recurses once per nesting
// level and has no limit; a MiB of openers would overflow the stack (a
// fatal error). The reader that feeds it stops it instead.
func TestHostileNestingIsBounded(t *testing.T) {
	const n = 1 << 20
	for _, tc := range []struct{ name, pre, open, close string }{
		{"subshells", "", "(", ")"},
		{"arithmetic", "X=$((", "(", ")"},
		{"command substitutions", "X=", "$(", ")"},
		{"parameter defaults", "X=", "${x:-", "}"},
		{"quoted substitutions", "X=", `"$(`, `)"`},
		{"if", "", "if x; then\n", "fi\n"},
		{"functions", "", "f() {\n", "}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			reps := n / len(tc.open)
			src := "python3 a.py --lr 1\n" + tc.pre + strings.Repeat(tc.open, reps) + "python3 b.py --x 2" +
				strings.Repeat(tc.close, reps) + "\n"
			start := time.Now()
			s := parseT(t, src, Options{})
			if len(s.Problems) != 1 || !strings.Contains(s.Problems[0].Msg, "nested too deeply") {
				t.Fatalf("problems: %q", s.Problems[:min(3, len(s.Problems))])
			}
			if only(t, s, "--lr").Value != "1" {
				t.Error("the flags before the deep part are lost")
			}
			t.Logf("%d bytes in %v", len(src), time.Since(start))
		})
	}
}

func TestEscapesInOperands(t *testing.T) {
	s := parseT(t, `P="a/b/c"
python3 t.py --slash "${P//\//-}" --first ${P/\//_} --suffix ${P%/*} --dq "x\"y\$z"
`, Options{})
	for flag, want := range map[string]string{"--slash": "a-b-c", "--first": "a_b/c", "--suffix": "a/b", "--dq": `x"y$z`} {
		if got := only(t, s, flag).Value; got != want {
			t.Errorf("%s = %q, want %q", flag, got, want)
		}
	}
}

// TestWindowsLineEnds: a script saved with CRLF reads as with LF.
func TestWindowsLineEnds(t *testing.T) {
	src := "ARGS=(\n  # NOTE: kept\n  --tp 2 # two\n)\nif [ \"$M\" = a ]; then\n  python3 x.py \"${ARGS[@]}\" --m a\nfi\n"
	lf := parseT(t, src, Options{})
	crlf := parseT(t, strings.ReplaceAll(src, "\n", "\r\n"), Options{})
	if len(lf.Flags) != 2 || len(crlf.Flags) != len(lf.Flags) {
		t.Fatalf("flags: LF %+v CRLF %+v", lf.Flags, crlf.Flags)
	}
	for i := range lf.Flags {
		if lf.Flags[i] != crlf.Flags[i] {
			t.Errorf("LF %+v\nCRLF %+v", lf.Flags[i], crlf.Flags[i])
		}
	}
	if c := only(t, lf, "--tp").Comment; c != "NOTE: kept\ntwo" {
		t.Errorf("--tp comment = %q", c)
	}
}

// TestDoubleBracketPrecedence: mvdan nests [[ a && b || c ]] as
// a && (b || c) and [[ ! a && b ]] as !(a && b); bash binds ! tightest
// and && before ||.
func TestDoubleBracketPrecedence(t *testing.T) {
	for _, tc := range []struct {
		cond string
		want Taken
	}{
		{`-z $M && -n $M || -n $M`, TakenYes},
		{`! -n $M || -n $M`, TakenYes},
		{`-n $M || -z $M && -z $M`, TakenYes},
		{`! -n $M && -n $M`, TakenNo},
		{`! ( -z $M || -z $M ) && -n $M`, TakenYes},
		{`-n $M && ! -z $M || -z $M`, TakenYes},
		{`$M == as* && ( -z $M || $M < b )`, TakenYes},
		{`-z $U && -n $U || -n x`, TakenYes},
		{`-n x && $U == a`, TakenUnknown},
	} {
		s := parseT(t, "M=async\nif [[ "+tc.cond+" ]]; then\n  python3 t.py --x 1\nfi\n", Options{})
		if got := only(t, s, "--x").Taken; got != tc.want {
			t.Errorf("[[ %s ]]: %v, want %v", tc.cond, got, tc.want)
		}
	}
}

// TestCommentsByLine: mvdan attaches a comment to a node; a flag takes the
// comment on its line, the comment lines above it and the NOTE heading
// its block, whichever node the parser hung them on.
func TestCommentsByLine(t *testing.T) {
	s := parseT(t, `ARGS=(  # parallelism
   --tp 2
   --pp 1 # one stage
)
python3 t.py "${ARGS[@]}" \
   --x "$(date # the substitution's, not the flag's
)"
Y="two
lines" # trails the string, heads nothing
python3 u.py --y "$Y"
`, Options{})
	for flag, want := range map[string]struct {
		comment string
		line    int
	}{
		"--tp": {"parallelism", 2},
		"--pp": {"one stage", 3},
		"--x":  {"", 6},
		"--y":  {"", 10},
	} {
		if f := only(t, s, flag); f.Comment != want.comment || f.Line != want.line {
			t.Errorf("%s: comment %q line %d; want %q %d", flag, f.Comment, f.Line, want.comment, want.line)
		}
	}
}
