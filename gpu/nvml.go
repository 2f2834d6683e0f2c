package gpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Sample is one reading of one GPU counter. Metrics carry dcgm-exporter's
// field names (DCGM_FI_DEV_SM_CLOCK, ...) in dcgm-exporter's units, so
// that samples from the NVML sampler and from an exporter's scrape land in
// the counters table alike; the gpu_samples view maps both to one
// vocabulary.
type Sample struct {
	Device int // the GPU's index as the training processes see it
	TS     int64
	Metric string
	Value  float64
}

// GPUInfo names one sampled GPU.
type GPUInfo struct {
	Device int    // index as the training processes see it (its place in CUDA_VISIBLE_DEVICES, else the NVML index)
	Index  int    // NVML index
	UUID   string // GPU-...
	Name   string // NVIDIA H100 80GB HBM3
	BusID  string // 00000000:18:00.0
}

// Labels are the GPU's labels as dcgm-exporter writes them.
func (g GPUInfo) Labels() map[string]string {
	return map[string]string{"UUID": g.UUID, "modelName": g.Name, "pci_bus_id": g.BusID,
		"device": "nvidia" + strconv.Itoa(g.Index), "source": "nvml"}
}

// Metric names the sampler writes, dcgm-exporter's.
const (
	MetricSMClock    = "DCGM_FI_DEV_SM_CLOCK"
	MetricMemClock   = "DCGM_FI_DEV_MEM_CLOCK"
	MetricPower      = "DCGM_FI_DEV_POWER_USAGE"
	MetricPowerLimit = "DCGM_FI_DEV_ENFORCED_POWER_LIMIT"
	MetricTemp       = "DCGM_FI_DEV_GPU_TEMP"
	MetricGPUUtil    = "DCGM_FI_DEV_GPU_UTIL"
	MetricMemUtil    = "DCGM_FI_DEV_MEM_COPY_UTIL"
	MetricFBUsed     = "DCGM_FI_DEV_FB_USED"
	MetricFBFree     = "DCGM_FI_DEV_FB_FREE"
	MetricReasons    = "DCGM_FI_DEV_CLOCKS_EVENT_REASONS"
	MetricXID        = "DCGM_FI_DEV_XID_ERRORS"
	MetricECCDBE     = "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL"
	MetricPCIeTX     = "DCGM_FI_PROF_PCIE_TX_BYTES"
	MetricPCIeRX     = "DCGM_FI_PROF_PCIE_RX_BYTES"
	MetricNVLinkTX   = "DCGM_FI_PROF_NVLINK_TX_BYTES"
	MetricNVLinkRX   = "DCGM_FI_PROF_NVLINK_RX_BYTES"
	// MetricLost is 1 when NVML reports the GPU lost (fallen off the bus);
	// the sampler stops reading it.
	MetricLost = "TRAINSCOPE_GPU_LOST"
)

// ErrNoNVML is returned when the NVIDIA driver's library cannot be loaded
// (no driver, or no GPU on this machine).
var ErrNoNVML = errors.New("NVML (libnvidia-ml.so.1) cannot be loaded: no NVIDIA driver on this machine")

// Sampler reads every GPU's counters through NVML. It loads the driver
// library at run time, so a binary built with it runs on machines without
// a GPU; Open says why it cannot sample there.
type Sampler struct {
	lib    nvml.Interface
	gpus   []*nvmlGPU
	events nvml.EventSet
	warn   func(string)
	now    func() time.Time
}

type nvmlGPU struct {
	GPUInfo
	dev         nvml.Device
	lost        bool
	unsupported map[string]bool
	// NVLink byte counters at the previous sweep, for rates
	nvlTX, nvlRX uint64
	nvlAt        int64
}

// OpenNVML initialises NVML through lib (nvml.New() for the real library,
// a mock in tests) and finds the GPUs to sample: those CUDA_VISIBLE_DEVICES
// names when visible is set (indexes or UUIDs), numbered as the training
// processes see them, else every GPU. warn hears of what cannot be read.
func OpenNVML(lib nvml.Interface, visible string, warn func(string)) (*Sampler, error) {
	if warn == nil {
		warn = func(string) {}
	}
	if ret := initNVML(lib); ret != nvml.SUCCESS {
		if ret == nvml.ERROR_LIBRARY_NOT_FOUND {
			return nil, ErrNoNVML
		}
		return nil, fmt.Errorf("NVML init: %s", errorString(lib, ret))
	}
	s := &Sampler{lib: lib, warn: warn, now: time.Now}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		lib.Shutdown()
		return nil, fmt.Errorf("NVML device count: %s", errorString(lib, ret))
	}
	var all []*nvmlGPU
	for i := range n {
		dev, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			warn(fmt.Sprintf("GPU %d: cannot be opened (%s); not sampled", i, errorString(lib, ret)))
			continue
		}
		g := &nvmlGPU{GPUInfo: GPUInfo{Device: i, Index: i}, dev: dev, unsupported: map[string]bool{}}
		g.UUID, _ = dev.GetUUID()
		g.Name, _ = dev.GetName()
		if pci, ret := dev.GetPciInfo(); ret == nvml.SUCCESS {
			g.BusID = cString(pci.BusId[:])
		}
		all = append(all, g)
	}
	s.gpus = pickVisible(all, visible, warn)
	if len(s.gpus) == 0 {
		lib.Shutdown()
		return nil, errors.New("NVML finds no GPU to sample")
	}
	s.watchXID()
	return s, nil
}

// initNVML calls lib.Init, turning the panic of a library that cannot be
// loaded into ERROR_LIBRARY_NOT_FOUND.
func initNVML(lib nvml.Interface) (ret nvml.Return) {
	defer func() {
		if recover() != nil {
			ret = nvml.ERROR_LIBRARY_NOT_FOUND
		}
	}()
	return lib.Init()
}

// pickVisible keeps the GPUs CUDA_VISIBLE_DEVICES names, in its order,
// numbered 0, 1, ... as CUDA numbers them for the training processes.
func pickVisible(all []*nvmlGPU, visible string, warn func(string)) []*nvmlGPU {
	visible = strings.TrimSpace(visible)
	if visible == "" {
		return all
	}
	var out []*nvmlGPU
	for _, tok := range strings.Split(visible, ",") {
		tok = strings.TrimSpace(tok)
		var hit *nvmlGPU
		for _, g := range all {
			if idx, err := strconv.Atoi(tok); err == nil && g.Index == idx || tok != "" && strings.HasPrefix(g.UUID, tok) {
				hit = g
				break
			}
		}
		if hit == nil {
			warn(fmt.Sprintf("CUDA_VISIBLE_DEVICES=%s: %q names no GPU NVML sees; sampling every GPU by its NVML index instead", visible, tok))
			return all
		}
		out = append(out, hit)
	}
	for pos, g := range out {
		g.Device = pos
	}
	return out
}

// watchXID registers every GPU for XID events; a driver that cannot is
// warned about, and XIDs are then not sampled.
func (s *Sampler) watchXID() {
	set, ret := s.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		s.warn("XID events cannot be watched: " + errorString(s.lib, ret))
		return
	}
	for _, g := range s.gpus {
		if ret := g.dev.RegisterEvents(nvml.EventTypeXidCriticalError, set); ret != nvml.SUCCESS && ret != nvml.ERROR_NOT_SUPPORTED {
			s.warn(fmt.Sprintf("GPU %d: XID events cannot be watched: %s", g.Index, errorString(s.lib, ret)))
		}
	}
	s.events = set
}

// GPUs lists the sampled GPUs.
func (s *Sampler) GPUs() []GPUInfo {
	out := make([]GPUInfo, len(s.gpus))
	for i, g := range s.gpus {
		out[i] = g.GPUInfo
	}
	return out
}

// Close releases NVML.
func (s *Sampler) Close() {
	if s.events != nil {
		s.events.Free()
	}
	s.lib.Shutdown()
}

// Sample reads every GPU once and appends the readings to out. A counter
// the GPU does not support is left out from then on; a GPU NVML reports
// lost gives one MetricLost sample and is not read again.
func (s *Sampler) Sample(out []Sample) []Sample {
	ts := s.now().UnixNano()
	for _, g := range s.gpus {
		if g.lost {
			continue
		}
		out = s.read(g, ts, out)
	}
	return s.xids(ts, out)
}

func (s *Sampler) read(g *nvmlGPU, ts int64, out []Sample) []Sample {
	add := func(metric string, v float64, ret nvml.Return) bool {
		switch ret {
		case nvml.SUCCESS:
			out = append(out, Sample{Device: g.Device, TS: ts, Metric: metric, Value: v})
		case nvml.ERROR_GPU_IS_LOST:
			g.lost = true
			s.warn(fmt.Sprintf("GPU %d (%s) is lost: NVML can no longer reach it (fallen off the bus, XID 79?); it is not sampled any more", g.Index, g.UUID))
			out = append(out, Sample{Device: g.Device, TS: ts, Metric: MetricLost, Value: 1})
			return false
		default:
			// not supported on this GPU or driver (or in a MIG mode): ask no
			// more, and say so once
			g.unsupported[metric] = true
			if ret != nvml.ERROR_NOT_SUPPORTED {
				s.warn(fmt.Sprintf("GPU %d: %s cannot be read (%s); not sampled any more", g.Index, metric, errorString(s.lib, ret)))
			}
		}
		return true
	}
	want := func(metric string) bool { return !g.unsupported[metric] }
	d := g.dev
	steps := []func() bool{
		func() bool {
			v, r := d.GetClockInfo(nvml.CLOCK_SM)
			return !want(MetricSMClock) || add(MetricSMClock, float64(v), r)
		},
		func() bool {
			v, r := d.GetClockInfo(nvml.CLOCK_MEM)
			return !want(MetricMemClock) || add(MetricMemClock, float64(v), r)
		},
		func() bool {
			v, r := d.GetPowerUsage()
			return !want(MetricPower) || add(MetricPower, float64(v)/1000, r)
		},
		func() bool {
			v, r := d.GetEnforcedPowerLimit()
			return !want(MetricPowerLimit) || add(MetricPowerLimit, float64(v)/1000, r)
		},
		func() bool {
			v, r := d.GetTemperature(nvml.TEMPERATURE_GPU)
			return !want(MetricTemp) || add(MetricTemp, float64(v), r)
		},
		func() bool {
			if !want(MetricGPUUtil) {
				return true
			}
			u, r := d.GetUtilizationRates()
			return add(MetricGPUUtil, float64(u.Gpu), r) && (r != nvml.SUCCESS || add(MetricMemUtil, float64(u.Memory), r))
		},
		func() bool {
			if !want(MetricFBUsed) {
				return true
			}
			m, r := d.GetMemoryInfo()
			return add(MetricFBUsed, float64(m.Used>>20), r) && (r != nvml.SUCCESS || add(MetricFBFree, float64(m.Free>>20), r))
		},
		func() bool {
			v, r := d.GetCurrentClocksEventReasons()
			return !want(MetricReasons) || add(MetricReasons, float64(v), r)
		},
		func() bool {
			v, r := d.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC)
			return !want(MetricECCDBE) || add(MetricECCDBE, float64(v), r)
		},
		func() bool {
			v, r := d.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES) // KB/s over 20 ms
			return !want(MetricPCIeTX) || add(MetricPCIeTX, float64(v)*1024, r)
		},
		func() bool {
			v, r := d.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES)
			return !want(MetricPCIeRX) || add(MetricPCIeRX, float64(v)*1024, r)
		},
		func() bool { return !want(MetricNVLinkTX) || s.nvlink(g, ts, add) },
	}
	for _, step := range steps {
		if !step() {
			break // lost
		}
	}
	return out
}

// nvlink samples the GPU's NVLink data throughput (KiB counters summed
// over its links) as bytes per second since the previous sweep.
func (s *Sampler) nvlink(g *nvmlGPU, ts int64, add func(string, float64, nvml.Return) bool) bool {
	vals := []nvml.FieldValue{
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_TX, ScopeId: ^uint32(0)},
		{FieldId: nvml.FI_DEV_NVLINK_THROUGHPUT_DATA_RX, ScopeId: ^uint32(0)},
	}
	ret := g.dev.GetFieldValues(vals)
	if ret == nvml.SUCCESS && (nvml.Return(vals[0].NvmlReturn) != nvml.SUCCESS || nvml.Return(vals[1].NvmlReturn) != nvml.SUCCESS) {
		ret = nvml.ERROR_NOT_SUPPORTED
	}
	if ret != nvml.SUCCESS {
		return add(MetricNVLinkTX, 0, ret)
	}
	tx, rx := binary.LittleEndian.Uint64(vals[0].Value[:]), binary.LittleEndian.Uint64(vals[1].Value[:])
	if g.nvlAt > 0 && ts > g.nvlAt && tx >= g.nvlTX && rx >= g.nvlRX {
		dt := float64(ts-g.nvlAt) / 1e9
		add(MetricNVLinkTX, float64(tx-g.nvlTX)*1024/dt, nvml.SUCCESS)
		add(MetricNVLinkRX, float64(rx-g.nvlRX)*1024/dt, nvml.SUCCESS)
	}
	g.nvlTX, g.nvlRX, g.nvlAt = tx, rx, ts
	return true
}

// xids drains the XID events that arrived since the last sweep.
func (s *Sampler) xids(ts int64, out []Sample) []Sample {
	if s.events == nil {
		return out
	}
	for range 64 {
		ev, ret := s.events.Wait(0)
		if ret != nvml.SUCCESS {
			break // ERROR_TIMEOUT: none left
		}
		for _, g := range s.gpus {
			if g.dev == ev.Device {
				out = append(out, Sample{Device: g.Device, TS: ts, Metric: MetricXID, Value: float64(ev.EventData)})
			}
		}
	}
	return out
}

func errorString(lib nvml.Interface, ret nvml.Return) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("NVML error %d", int32(ret))
		}
	}()
	return lib.ErrorString(ret)
}

func cString(b []int8) string {
	var sb strings.Builder
	for _, c := range b {
		if c == 0 {
			break
		}
		sb.WriteByte(byte(c))
	}
	return sb.String()
}
