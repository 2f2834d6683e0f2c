package analyze

import "testing"

// DuckDB's threads for the detectors: the cores, as many as its memory
// limit holds at detectThreadMemory a thread (8 with analyze's 512MB,
// whatever --threads says, up to 192 cores), never none; a limit
// ParseSize does not read leaves the cores.
func TestDetectThreads(t *testing.T) {
	for _, c := range []struct {
		cores int
		limit string
		want  int
	}{
		{1, "512MB", 1},
		{2, "512MB", 2},
		{16, "512MB", 8},
		{192, "512MB", 8},
		{192, "2GB", 31},
		{192, "64GiB", 192},
		{16, "10MB", 1},
		{16, "80%", 16},
	} {
		if got := detectThreads(c.cores, c.limit); got != c.want {
			t.Errorf("detectThreads(%d, %q) = %d, want %d", c.cores, c.limit, got, c.want)
		}
	}
}
