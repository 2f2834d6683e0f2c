package kineto

import "bytes"

// The counters table's rows: a trace's [memory] instant events (tensor
// memory allocated and reserved), its counter tracks ('C' events, see
// commit) and a memory timeline's entries.

// instant takes an instant event: the end of the recording window, or a
// [memory] event.
func (b *builder) instant(e *event) {
	if bytes.Equal(e.name, []byte("Record Window End")) {
		b.t.Complete = true
		return
	}
	if !bytes.Equal(e.name, []byte("[memory]")) {
		return
	}
	a := &e.args
	cpu := a.has&aDeviceType != 0 && a.deviceType == 0
	dev := int64(-1)
	if a.has&aDeviceID != 0 && !cpu {
		dev = a.deviceID
	}
	off := 0
	if cpu {
		off = 2
	}
	if a.has&aTotalAllocated != 0 {
		b.counter(dev, e.ts, b.memMetrics[off], float64(a.totalAllocated))
	}
	if a.has&aTotalReserved != 0 {
		b.counter(dev, e.ts, b.memMetrics[off+1], float64(a.totalReserved))
	}
}

func (b *builder) counter(dev, ts int64, metric int32, v float64) {
	if b.slim {
		// the second pass reads them and hands them over with the
		// chunks: a 3 GB trace's 3.9M counter rows held 92 MB
		b.countersLeft = true
		return
	}
	c := &b.t.Counters
	c.Device.AppendOpt(int32(dev), dev >= 0)
	c.TS.Append(ts)
	c.Metric.Append(metric)
	c.Value.Append(v)
}

// timeline stores one memory-timeline entry [ts, action, bytes, category]
// as the running total of its category.
func (b *builder) timeline(v [4]int64) {
	if b.timelineTotals == nil {
		b.timelineTotals = map[int64]int64{}
	}
	b.nEvents++
	b.timelineTotals[v[3]] += v[2]
	metric := b.str.ID("memory_timeline_bytes." + timelineCategory(v[3]))
	b.counter(-1, v[0], metric, float64(b.timelineTotals[v[3]]))
}

// timelineCategory names the categories of torch.profiler's memory timeline.
func timelineCategory(c int64) string {
	names := [...]string{"parameter", "optimizer_state", "input", "temporary", "activation", "gradient", "autograd_detail"}
	if c >= 0 && int(c) < len(names) {
		return names[c]
	}
	return "unknown"
}
