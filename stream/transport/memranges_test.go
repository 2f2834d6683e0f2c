package transport

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/trainscope/trainscope/stream"
)

// memBatch is a one-row batch of a memory table, or of slices, holding v
// in the column TestBatchRangesOfSizesAndDurations checks.
func memBatch(t *testing.T, table string, v int64) arrow.RecordBatch {
	t.Helper()
	str := stream.NewStrings()
	id := str.ID("x")
	switch table {
	case "mem_segments":
		s := stream.MemSegmentTable{Str: str}
		s.Device.Append(0)
		s.Address.Append(4096)
		s.Total.Append(2 << 20)
		s.Allocated.Append(v)
		s.Active.Append(1024)
		s.Requested.Append(1000)
		s.Stream.Append(0)
		s.SegmentType.Append(id)
		s.Pool.Append(id)
		s.Expandable = append(s.Expandable, false)
		s.Blocks.Append(1)
		s.Frame.AppendNull()
		return s.Record("r", "h", 0)
	case "mem_blocks":
		b := stream.MemBlockTable{Str: str}
		b.Device.Append(0)
		b.SegmentAddress.Append(4096)
		b.Address.Append(4096)
		b.Size.Append(v)
		b.Requested.Append(1000)
		b.State.Append(id)
		b.Frame.AppendNull()
		return b.Record("r", 0)
	case "mem_events":
		e := stream.MemEventTable{Str: str}
		e.Device.Append(0)
		e.Seq.Append(0)
		e.Action.Append(id)
		e.Addr.Append(4096)
		e.Size.Append(1024)
		e.Stream.Append(0)
		e.TS.Append(1000)
		e.DeviceFree.Append(v)
		e.Frame.AppendNull()
		return e.Record("r", 0)
	case "slices_core":
		s := stream.NewSliceTable(str, false)
		s.Kind.Append(id)
		s.Cat.Append(id)
		s.Name.Append(id)
		s.TS.Append(1000)
		s.Dur.Append(v)
		s.PID.Append(1)
		s.TID.Append(1)
		s.Device.AppendNull()
		s.Stream.AppendNull()
		s.Correlation.AppendNull()
		s.ExternalID.AppendNull()
		core, detail := s.TakeRecords("r", "h", 0)
		if detail != nil {
			detail.Release()
		}
		return core[0]
	}
	t.Fatalf("no table %s", table)
	return nil
}

// The server refuses a batch with a memory size below zero or above
// stream.MaxMemBytes (a segment's allocated_size, a block's size, an event's
// device_free), and a slice with a negative duration, as it refuses a
// negative step: the readers never make one, so a batch that holds one is
// corrupt or forged, and would be stored as "-5 B allocated".
func TestBatchRangesOfSizesAndDurations(t *testing.T) {
	for _, c := range []struct {
		table, column string
	}{{"mem_segments", "allocated_size"}, {"mem_blocks", "size"}, {"mem_events", "device_free"}, {"slices_core", "dur"}} {
		for _, v := range []int64{-5, stream.MaxMemBytes + 1} {
			if c.column == "dur" && v > 0 {
				v = stream.MaxDurNS + 1
			}
			rec := memBatch(t, c.table, v)
			err := CheckBatch(c.table, rec)
			rec.Release()
			if err == nil || !strings.Contains(err.Error(), "table "+c.table+": column "+c.column+": row 0: ") {
				t.Errorf("%s.%s = %d: %v, want it refused", c.table, c.column, v, err)
			}
		}
		rec := memBatch(t, c.table, 1024)
		if err := CheckBatch(c.table, rec); err != nil {
			t.Errorf("%s.%s = 1024: %v", c.table, c.column, err)
		}
		// the wire too: what the ingestor decodes
		b, err := Encode(c.table, rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if _, got, err := Decode(b); err != nil {
			t.Errorf("%s: decode: %v", c.table, err)
		} else {
			got.Release()
		}
		bad := memBatch(t, c.table, -5)
		if b, err = Encode(c.table, bad); err != nil {
			t.Fatal(err)
		}
		bad.Release()
		if _, _, err := Decode(b); err == nil || !strings.Contains(err.Error(), c.column) {
			t.Errorf("%s.%s = -5 decoded: %v", c.table, c.column, err)
		}
	}
}
