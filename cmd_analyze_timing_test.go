package main

import (
	"regexp"
	"runtime"
	"strconv"
	"testing"
)

// analyze --timing says where the time went, phase by phase, and the most
// memory the process held (on Linux and macOS), so that a user can see
// both without a profiler.
func TestAnalyzeTimingLine(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "rank-0.pt.trace.json", []byte(smallTrace))
	code, _, errOut := trainscope(t, "analyze", dir, "-q", "--timing")
	if code != 0 {
		t.Fatalf("analyze exit %d: %s", code, errOut)
	}
	line := regexp.MustCompile(`(?m)^timing: load \S+ \(read \S+ cpu over 1 files, insert \S+\), detectors \S+, report \S+; 3 events, [0-9.]+ MB JSON(; peak memory (\d+) MB)?$`).FindStringSubmatch(errOut)
	if line == nil {
		t.Fatalf("no timing line in:\n%s", errOut)
	}
	if runtime.GOOS == "linux" || runtime.GOOS == "darwin" {
		mb, err := strconv.Atoi(line[2])
		if err != nil || mb < 10 {
			t.Errorf("peak memory %q MB: want the process's peak, at least 10 MB", line[2])
		}
	}
	if !regexp.MustCompile(`(?m)^timing: \d+ detectors and shared views, `).MatchString(errOut) {
		t.Errorf("no line of the slowest detectors in:\n%s", errOut)
	}
	sum := regexp.MustCompile(`(?m)^timing: (\d+) detector queries: planning [0-9.]+m?s, executing [0-9.]+m?s, summed`).FindStringSubmatch(errOut)
	if sum == nil {
		t.Fatalf("no line of the detectors' planning in:\n%s", errOut)
	}
	if n, _ := strconv.Atoi(sum[1]); n < 30 {
		t.Errorf("%d detector queries planned: want every detector's", n)
	}
}
