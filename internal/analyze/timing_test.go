package analyze

import (
	"bytes"
	"testing"
	"time"
)

// The detector phase shows progress: a line when it starts, one at most a
// second (the clock is the test's), and one when every detector is done.
func TestDetectorProgress(t *testing.T) {
	var b bytes.Buffer
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := detectorProgress(&b, 63, 16, func() time.Time { return clock })
	for done := 1; done <= 63; done++ {
		clock = clock.Add(100 * time.Millisecond)
		p(done, 63)
	}
	want := "running 63 detectors, up to 16 at a time\n" +
		"detectors: 10 of 63 done\ndetectors: 20 of 63 done\ndetectors: 30 of 63 done\n" +
		"detectors: 40 of 63 done\ndetectors: 50 of 63 done\ndetectors: 60 of 63 done\n" +
		"detectors: 63 of 63 done in 6.3s\n"
	if b.String() != want {
		t.Errorf("progress:\n%s\nwant:\n%s", b.String(), want)
	}
}
