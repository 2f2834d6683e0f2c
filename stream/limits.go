package stream

import (
	"fmt"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// The range of timestamps and durations a batch may carry, in ns. Within
// them a timestamp plus a duration, or the difference of two timestamps,
// never overflows int64 in a detector. MaxTimeNS is in the year 2116;
// MaxDurNS is 36 years. Readers refuse values beyond them, with the file
// and offset.
const (
	MaxTimeNS = int64(1) << 62
	MinTimeNS = -(int64(1) << 60)
	MaxDurNS  = int64(1) << 60
)

// MaxMemBytes bounds a memory snapshot's sizes (a segment's, a block's,
// an allocator event's, free device memory): 1 PiB, thousands of times
// the memory of any GPU, and 8192 of them sum inside int64. A size below
// zero or above it is a corrupt snapshot; the reader refuses it with the
// file and offset.
const MaxMemBytes = int64(1) << 50

// MaxRunIDBytes bounds a run id: it names files and folders (reports,
// Parquet partitions), which most file systems cap at 255 bytes.
const MaxRunIDBytes = 200

// CheckRunID says whether id can name a run.
func CheckRunID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("a run id must not be empty")
	case len(id) > MaxRunIDBytes:
		return fmt.Errorf("run id of %d bytes; at most %d (it names files and folders)", len(id), MaxRunIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("run id %q is not valid UTF-8", id)
	}
	return nil
}

// MaxRank bounds rank numbers (16.7M ranks).
const MaxRank = 1 << 24

// valueRange is what the readers can produce in an integer column.
type valueRange struct{ lo, hi int64 }

// columnRanges apply to a column of that name in any table.
var columnRanges = map[string]valueRange{
	"ts":           {MinTimeNS, MaxTimeNS},
	"start_ns":     {MinTimeNS, MaxTimeNS},
	"end_ns":       {MinTimeNS, MaxTimeNS},
	"launch_ts":    {MinTimeNS, MaxTimeNS},
	"base_time_ns": {MinTimeNS, MaxTimeNS},
	"dur":          {0, MaxDurNS},
	// a slice's duration less its children's: below zero where a trace's
	// children overlap each other or outlast their parent (real traces do)
	"self_dur":     {-MaxDurNS, MaxDurNS},
	"gpu_busy_dur": {0, MaxDurNS},
	"rank":         {0, MaxRank - 1},
	"step":         {0, 1<<31 - 1},
	"world_size":   {0, MaxRank},
	"bytes":        {0, 1<<63 - 1},
	// the memory tables' sizes (mem_segments, mem_blocks, mem_events)
	"total_size":     {0, MaxMemBytes},
	"allocated_size": {0, MaxMemBytes},
	"active_size":    {0, MaxMemBytes},
	"requested_size": {0, MaxMemBytes},
	"size":           {0, MaxMemBytes},
	"device_free":    {0, MaxMemBytes},
}

// CheckRanges verifies only that rec's values are in the ranges trainscope
// stores (times, durations, ranks, steps): what a reader checks before it
// hands a batch on, so that a value no detector can compute with is an
// error naming the file rather than an overflow later (memory sizes too).
func CheckRanges(table string, rec arrow.RecordBatch) error {
	for i, col := range rec.Columns() {
		name := rec.ColumnName(i)
		if r, ok := columnRanges[name]; ok {
			if err := checkRange(col, r); err != nil {
				return fmt.Errorf("table %s: column %s: %w", table, name, err)
			}
		}
	}
	return nil
}

func checkRange(a arrow.Array, r valueRange) error {
	check := func(i int, v int64) error {
		if v < r.lo || v > r.hi {
			return fmt.Errorf("row %d: %d is outside [%d, %d]", i, v, r.lo, r.hi)
		}
		return nil
	}
	switch a := a.(type) {
	case *array.Int64:
		for i, v := range a.Int64Values() {
			if a.IsValid(i) {
				if err := check(i, v); err != nil {
					return err
				}
			}
		}
	case *array.Int32:
		for i, v := range a.Int32Values() {
			if a.IsValid(i) {
				if err := check(i, int64(v)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
