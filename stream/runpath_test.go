package stream

import (
	"strings"
	"testing"
)

// Run ids that RunToken (the subject token) gives one name get distinct
// path tokens, ids RunToken left alone keep that name, and a token reads
// back as its id.
func TestRunPathTokenInjective(t *testing.T) {
	for in, want := range map[string]string{
		"x/y": "x%2Fy", "x_y": "x_y", "exp.1": "exp%2E1", "exp_1": "exp_1",
		"run-2024_01": "run-2024_01", "a%2Fb": "a%252Fb", "..": "%2E%2E",
		"é": "%C3%A9", "a b": "a%20b", "~": "%7E", "": "~",
	} {
		if got := RunPathToken(in); got != want {
			t.Errorf("RunPathToken(%q) = %q, want %q", in, got, want)
		}
	}
	ids := []string{"x/y", "x_y", "x.y", "x:y", `x\y`, "x%2Fy", "x%2fy", "x y", "X_y", "exp.1", "exp_1", "a\x00b", "a\xffb", "~", ""}
	long := strings.Repeat("é", 90)
	ids = append(ids, long+"a", long+"b", strings.Repeat("/", 199), strings.Repeat("/", 200))
	seen := map[string]string{}
	for _, id := range ids {
		tok := RunPathToken(id)
		if other, dup := seen[tok]; dup {
			t.Errorf("run ids %q and %q share the path token %q", other, id, tok)
		}
		seen[tok] = id
		if len(tok) > MaxRunPathBytes {
			t.Errorf("RunPathToken(%q) is %d bytes, more than %d", id, len(tok), MaxRunPathBytes)
		}
		if strings.ContainsAny(tok, "/\\:*?[]\x00.") {
			t.Errorf("RunPathToken(%q) = %q: a character a path or a glob gives a meaning", id, tok)
		}
		back, ok := ParseRunPathToken(tok)
		cut := strings.Contains(tok, "~")
		if cut == ok || ok && back != id {
			t.Errorf("ParseRunPathToken(%q) = %q, %v; want %q, %v", tok, back, ok, id, !cut)
		}
	}
	if tok := RunPathToken(long + "a"); !strings.HasPrefix(tok, "%C3%A9") || strings.Count(tok, "~") != 1 {
		t.Errorf("a long id's token %q", tok)
	}
	for _, bad := range []string{"x%2", "x%2f", "x%41", "a~", "a.b", ""} {
		if run, ok := ParseRunPathToken(bad); ok {
			t.Errorf("ParseRunPathToken(%q) = %q: RunPathToken makes no such token", bad, run)
		}
	}
}
