package gpu

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
)

// fakeNode is a DGX H100 from go-nvml's mocks whose GPUs read what the
// test sets: clocks, reasons, a lost GPU, XID events.
type fakeNode struct {
	*server.Server
	mu      sync.Mutex
	clock   [8]uint32
	reasons [8]uint64
	lost    [8]bool
	xids    []nvml.EventData
}

func newFakeNode() *fakeNode {
	n := &fakeNode{Server: dgxh100.New()}
	for i := range n.clock {
		n.clock[i] = 1980
	}
	n.ErrorStringFunc = func(r nvml.Return) string { return fmt.Sprintf("NVML return %d", int32(r)) }
	set := &mock.EventSet{
		WaitFunc: func(uint32) (nvml.EventData, nvml.Return) {
			n.mu.Lock()
			defer n.mu.Unlock()
			if len(n.xids) == 0 {
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
			ev := n.xids[0]
			n.xids = n.xids[1:]
			return ev, nvml.SUCCESS
		},
		FreeFunc: func() nvml.Return { return nvml.SUCCESS },
	}
	n.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS }
	for i, d := range n.Devices {
		dev := d.(*server.Device)
		gone := func() bool { n.mu.Lock(); defer n.mu.Unlock(); return n.lost[i] }
		dev.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
		dev.GetClockInfoFunc = func(c nvml.ClockType) (uint32, nvml.Return) {
			if gone() {
				return 0, nvml.ERROR_GPU_IS_LOST
			}
			n.mu.Lock()
			defer n.mu.Unlock()
			if c == nvml.CLOCK_MEM {
				return 2619, nvml.SUCCESS
			}
			return n.clock[i], nvml.SUCCESS
		}
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 640_000, nvml.SUCCESS }
		dev.GetEnforcedPowerLimitFunc = func() (uint32, nvml.Return) { return 700_000, nvml.SUCCESS }
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 66, nvml.SUCCESS }
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) {
			return nvml.Utilization{Gpu: 97, Memory: 41}, nvml.SUCCESS
		}
		dev.GetMemoryInfoFunc = func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 80 << 30, Used: 60 << 30, Free: 20 << 30}, nvml.SUCCESS
		}
		dev.GetCurrentClocksEventReasonsFunc = func() (uint64, nvml.Return) {
			n.mu.Lock()
			defer n.mu.Unlock()
			return n.reasons[i], nvml.SUCCESS
		}
		dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		dev.GetPcieThroughputFunc = func(c nvml.PcieUtilCounter) (uint32, nvml.Return) { return 1000, nvml.SUCCESS }
		// NVLink counters need a newer driver than this mock's: not supported
		dev.GetFieldValuesFunc = func([]nvml.FieldValue) nvml.Return { return nvml.ERROR_NOT_SUPPORTED }
	}
	return n
}

// sweep reads the node once at t and returns samples by "device metric".
func sweep(t *testing.T, s *Sampler, at time.Time) map[string]float64 {
	t.Helper()
	s.now = func() time.Time { return at }
	out := map[string]float64{}
	for _, x := range s.Sample(nil) {
		if x.TS != at.UnixNano() {
			t.Errorf("sample %+v not at %d", x, at.UnixNano())
		}
		out[fmt.Sprintf("%d %s", x.Device, x.Metric)] = x.Value
	}
	return out
}

// openFakeNode opens a sampler on a fresh fake node; the warnings it
// gives collect in the slice.
func openFakeNode(t *testing.T) (*fakeNode, *Sampler, *[]string) {
	t.Helper()
	node := newFakeNode()
	warnings := new([]string)
	s, err := OpenNVML(node, "", func(w string) { *warnings = append(*warnings, w) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return node, s, warnings
}

func TestSamplerReadsEveryGPU(t *testing.T) {
	_, s, warnings := openFakeNode(t)
	if g := s.GPUs(); len(g) != 8 || g[3].Device != 3 || g[3].Name != "NVIDIA H100 80GB HBM3" || !strings.HasPrefix(g[3].UUID, "GPU-") {
		t.Fatalf("GPUs %+v", g)
	}
	got := sweep(t, s, time.Unix(1_700_000_000, 0))
	want := map[string]float64{
		"3 " + MetricSMClock: 1980, "3 " + MetricMemClock: 2619, "3 " + MetricPower: 640, "3 " + MetricPowerLimit: 700,
		"3 " + MetricTemp: 66, "3 " + MetricGPUUtil: 97, "3 " + MetricMemUtil: 41, "3 " + MetricFBUsed: 60 << 10,
		"3 " + MetricFBFree: 20 << 10, "3 " + MetricReasons: 0, "3 " + MetricECCDBE: 0, "3 " + MetricPCIeTX: 1000 * 1024,
		"3 " + MetricPCIeRX: 1000 * 1024,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if len(got) != 8*len(want) {
		t.Errorf("%d samples, want %d (8 GPUs x %d counters; NVLink unsupported)", len(got), 8*len(want), len(want))
	}
	if len(*warnings) != 0 {
		t.Errorf("warnings %q: an unsupported counter is left out silently", *warnings)
	}
}

// The cases: clocks that drop, a throttle reason, an XID event and
// a GPU that disappears, sweep after sweep.
func TestSamplerFollowsTheGPUs(t *testing.T) {
	node, s, warnings := openFakeNode(t)
	t0 := time.Unix(1_700_000_000, 0)
	sweep(t, s, t0)

	node.mu.Lock()
	node.clock[3], node.reasons[3] = 1386, 0x20 // SW thermal slowdown
	node.xids = append(node.xids, nvml.EventData{Device: node.Devices[6], EventType: nvml.EventTypeXidCriticalError, EventData: 79})
	node.lost[5] = true
	node.mu.Unlock()
	got := sweep(t, s, t0.Add(100*time.Millisecond))
	if got["3 "+MetricSMClock] != 1386 || got["3 "+MetricReasons] != 0x20 {
		t.Errorf("rank 3 clock %v reasons %v, want 1386 and 0x20", got["3 "+MetricSMClock], got["3 "+MetricReasons])
	}
	if got["6 "+MetricXID] != 79 || got["5 "+MetricLost] != 1 {
		t.Errorf("XID on GPU 6 %v, GPU 5 lost %v", got["6 "+MetricXID], got["5 "+MetricLost])
	}
	for k := range got {
		if strings.HasPrefix(k, "5 ") && k != "5 "+MetricLost {
			t.Errorf("lost GPU 5 still sampled: %s", k)
		}
	}
	if w := *warnings; len(w) != 1 || !strings.Contains(w[0], "GPU 5") || !strings.Contains(w[0], "lost") {
		t.Errorf("warnings %q, want one about GPU 5 lost", w)
	}
	// next sweep: the XID is not repeated, GPU 5 stays out, the others go on
	got = sweep(t, s, t0.Add(200*time.Millisecond))
	if _, ok := got["6 "+MetricXID]; ok {
		t.Error("XID sampled twice")
	}
	if _, ok := got["5 "+MetricLost]; ok || got["4 "+MetricSMClock] != 1980 {
		t.Errorf("after the loss: %v", got)
	}
}

// CUDA_VISIBLE_DEVICES picks the GPUs and numbers them as the training
// processes see them.
func TestSamplerVisibleDevices(t *testing.T) {
	node := newFakeNode()
	uuid7, _ := node.Devices[7].GetUUID()
	for _, tc := range []struct {
		visible string
		want    []int // NVML indexes, in device order
		warn    bool
	}{
		{"", []int{0, 1, 2, 3, 4, 5, 6, 7}, false},
		{"3,5", []int{3, 5}, false},
		{" 6 , " + uuid7[:12], []int{6, 7}, false},
		{"3,9", []int{0, 1, 2, 3, 4, 5, 6, 7}, true},
	} {
		var warned bool
		s, err := OpenNVML(node, tc.visible, func(string) { warned = true })
		if err != nil {
			t.Fatal(err)
		}
		var idx []int
		for i, g := range s.GPUs() {
			idx = append(idx, g.Index)
			if g.Device != i {
				t.Errorf("%q: GPU %d is device %d, want %d", tc.visible, g.Index, g.Device, i)
			}
		}
		if fmt.Sprint(idx) != fmt.Sprint(tc.want) || warned != tc.warn {
			t.Errorf("CUDA_VISIBLE_DEVICES=%q: GPUs %v (warned %v), want %v (%v)", tc.visible, idx, warned, tc.want, tc.warn)
		}
		s.Close()
	}
}

// Without the driver's library the sampler says so; the caller goes on
// without counters.
func TestSamplerWithoutNVML(t *testing.T) {
	node := newFakeNode()
	node.InitFunc = func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }
	if _, err := OpenNVML(node, "", nil); !errors.Is(err, ErrNoNVML) {
		t.Errorf("mock without library: %v, want ErrNoNVML", err)
	}
	node.InitFunc = func() nvml.Return { return nvml.ERROR_DRIVER_NOT_LOADED }
	if _, err := OpenNVML(node, "", nil); err == nil || !strings.Contains(err.Error(), "NVML init") {
		t.Errorf("driver not loaded: %v", err)
	}
	// the real library, on this machine
	s, err := OpenNVML(nvml.New(), "", nil)
	if err == nil {
		s.Close()
		t.Skip("this machine has NVML: see TestSamplerOnRealGPU")
	}
	if !errors.Is(err, ErrNoNVML) {
		t.Errorf("real NVML on a machine without it: %v, want ErrNoNVML", err)
	}
}

// On a machine with a GPU (the device tool's), one sweep of the real thing.
func TestSamplerOnRealGPU(t *testing.T) {
	s, err := OpenNVML(nvml.New(), "", func(w string) { t.Log("warning:", w) })
	if err != nil {
		t.Skip("no GPU here:", err)
	}
	defer s.Close()
	for _, g := range s.GPUs() {
		t.Logf("GPU %d: %s %s %s", g.Index, g.Name, g.UUID, g.BusID)
	}
	got := s.Sample(nil)
	for _, x := range got {
		t.Logf("%d %s = %g", x.Device, x.Metric, x.Value)
	}
	var clock bool
	for _, x := range got {
		clock = clock || x.Metric == MetricSMClock && x.Value > 0
	}
	if !clock {
		t.Error("no SM clock read from a real GPU")
	}
}

// One sweep of eight GPUs: what the sampler itself costs (the mock's
// calls are nearly free, so this is our side of the agent's overhead).
func BenchmarkSweep8(b *testing.B) {
	node := newFakeNode()
	s, err := OpenNVML(node, "", nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	buf := make([]Sample, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = s.Sample(buf[:0])
	}
}
