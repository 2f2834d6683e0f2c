//go:build linux && amd64 && !duckdb_use_lib && !duckdb_use_static_lib

package duck

/*
#include <stddef.h>
#include <stdint.h>

// DuckDB's static build for linux-amd64 allocates with its own jemalloc,
// whose symbols carry the duckdb_je_ prefix.
extern int duckdb_je_mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

// 4096 is MALLCTL_ARENAS_ALL: every arena.
static int trainscope_je_purge(void) {
	return duckdb_je_mallctl("arena.4096.purge", NULL, NULL, NULL, 0);
}

// pages freed and not yet handed back (dirty and muzzy), or -1
static long long trainscope_je_retained_pages(void) {
	uint64_t epoch = 1;
	size_t sz = sizeof(epoch);
	if (duckdb_je_mallctl("epoch", &epoch, &sz, &epoch, sz) != 0) return -1;
	size_t dirty = 0, muzzy = 0;
	sz = sizeof(size_t);
	if (duckdb_je_mallctl("stats.arenas.4096.pdirty", &dirty, &sz, NULL, 0) != 0) return -1;
	if (duckdb_je_mallctl("stats.arenas.4096.pmuzzy", &muzzy, &sz, NULL, 0) != 0) return -1;
	return (long long)(dirty + muzzy);
}
*/
import "C"

import "os"

// releaseFreed hands the pages DuckDB's allocator keeps after frees back to
// the system now. jemalloc keeps them for reuse until its decay time
// passes; a compressed store's checkpoint frees the rows it compressed,
// 40-68 MB a trace on syn8, and holding them was a sixth of analyze's peak.
func releaseFreed() { C.trainscope_je_purge() }

// allocatorRetained is how many bytes DuckDB's allocator holds freed, not
// yet handed back to the system; ok is false where it cannot tell.
func allocatorRetained() (bytes int64, ok bool) {
	n := int64(C.trainscope_je_retained_pages())
	if n < 0 {
		return 0, false
	}
	return n * int64(os.Getpagesize()), true
}
