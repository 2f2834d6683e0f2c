package detectors

import (
	"regexp"
	"strings"
	"testing"
)

// TestMarkdownToHTML covers each construct the report writers emit.
func TestMarkdownToHTML(t *testing.T) {
	md := "# trainscope report\n\n## Summary\n\nRun `a<b>`: 2 rank(s).\n\n" +
		"### GPU compute\n\n#### [CRITICAL] gpu_idle — rank 0\n\n- value: 0.5 (threshold 0.2)\n- evidence: `{\"x\":1}`\n\n" +
		"| run_id | subject | gpu_ns |\n| --- | --- | --- |\n| `r` | `a \\| b` | 1.76 ms |\n\n" +
		"## Recommendations\n\n1. [warn] fix it\n   - because: gpu_idle (ranks 0-1)\n   - validate: x\n2. [info] another\n\nNo data for: y.\n" +
		"---\n**Context:** model=`a**b**`\n"
	body, toc := markdownToHTML(md)
	for _, want := range []string{
		`<h1 id="trainscope-report">trainscope report</h1>`,
		"<p>Run <code>a&lt;b&gt;</code>: 2 rank(s).</p>",
		`<h4 id="critical-gpu-idle-rank-0" class="critical">[CRITICAL] gpu_idle — rank 0</h4>`,
		"<ul>\n<li>value: 0.5 (threshold 0.2)</li>\n<li>evidence: <code>{&#34;x&#34;:1}</code></li>\n</ul>",
		"<tr><th>run_id</th><th>subject</th><th>gpu_ns</th></tr>",
		`<tr><td><code>r</code></td><td><code>a | b</code></td><td class="num">1.76 ms</td></tr>`,
		"<ol start=\"1\">\n<li>[warn] fix it<ul><li>because: gpu_idle (ranks 0-1)</li><li>validate: x</li></ul></li>\n<li>[info] another</li>\n</ol>",
		"<p>No data for: y.</p>",
		"<hr>\n<p><strong>Context:</strong> model=<code>a**b**</code></p>",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("body lacks %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "| ---") || strings.Contains(body, "<script") {
		t.Errorf("body:\n%s", body)
	}
	for _, want := range []string{`<li class="l2"><a href="#summary">Summary</a></li>`, `<li class="l3"><a href="#gpu-compute">GPU compute</a></li>`} {
		if !strings.Contains(toc, want) {
			t.Errorf("contents lack %q:\n%s", want, toc)
		}
	}
	if strings.Contains(toc, "gpu_idle") {
		t.Errorf("contents list level-4 headers:\n%s", toc)
	}
}

func TestAnchorsUnique(t *testing.T) {
	seen := map[string]int{}
	got := []string{anchor("GPU compute", seen), anchor("GPU compute", seen), anchor("!!", seen)}
	want := []string{"gpu-compute", "gpu-compute-2", "s"}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("anchor %d = %q, want %q", i, got[i], want[i])
		}
	}
}

// ourTags are the only tags markdownToHTML writes.
var ourTags = regexp.MustCompile(`</?(h[1-4]|p|ul|ol|li|div|table|tr|th|td|code|strong|hr)( (id|class|start)="[^"<>]*")*>`)

// FuzzMarkdownToHTML: report text carries names from the traces (kernels,
// stack frames, process groups); whatever it holds, the page has no tag
// but the renderer's own.
func FuzzMarkdownToHTML(f *testing.F) {
	f.Add("#### [WARN] x — <img src=x onerror=alert(1)>\n| a | b |\n| --- | --- |\n| `<script>` | **<b>** |\n1. <i>\n   - <s>\n---\n")
	f.Add("- `unterminated <x>\n| \\| <y> |")
	f.Fuzz(func(t *testing.T, md string) {
		body, toc := markdownToHTML(md)
		for _, out := range []string{body, toc} {
			rest := ourTags.ReplaceAllString(regexp.MustCompile(`<a href="#[^"<>]*">|</a>`).ReplaceAllString(out, ""), "")
			if strings.Contains(rest, "<") {
				t.Fatalf("a tag from the text survived:\n%q\n->\n%s", md, out)
			}
		}
	})
}
