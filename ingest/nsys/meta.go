package nsys

import (
	"strconv"

	"github.com/trainscope/trainscope/ingest/trace"
)

// readProcesses names each unit's process (PROCESSES).
func (r *reader) readProcesses() error {
	q, ok, err := r.d.sel("PROCESSES", []string{"globalPid"}, []string{"pid", "name"}, "")
	if err != nil || !ok {
		return err
	}
	return r.d.each("reading PROCESSES", q, nil, func(scan func(...any) error) error {
		var gpid, pid nullInt
		var name nullString
		if err := scan(&gpid, &pid, &name); err != nil {
			return err
		}
		for _, u := range r.byProc[gpid.Int64] {
			if !gpid.Valid || name.String == "" {
				continue
			}
			u.Process = name.String
			p := u.PID
			if pid.Valid {
				p = pid.Int64
			}
			u.b.t.ProcessNames[p] = name.String
		}
		return nil
	})
}

// readThreads names the threads of each unit's process (ThreadNames).
func (r *reader) readThreads() error {
	q, ok, err := r.d.sel("ThreadNames", []string{"nameId", "globalTid"}, nil, "")
	if err != nil || !ok {
		return err
	}
	return r.d.each("reading ThreadNames", q, nil, func(scan func(...any) error) error {
		var nameID int64
		var gtid nullInt
		if err := scan(&nameID, &gtid); err != nil {
			return err
		}
		name := r.strs[nameID]
		if !gtid.Valid || name == "" {
			return nil
		}
		for _, u := range r.byProc[gpidOf(gtid.Int64)] {
			u.b.t.ThreadNames[tidOf(gtid.Int64)] = name
		}
		return nil
	})
}

// gpuInfo is one TARGET_INFO_GPU row.
type gpuInfo struct {
	id, cuDevice           nullInt
	name                   string
	mem, sms, major, minor nullInt
}

// readDevices fills each trace's Devices from TARGET_INFO_GPU, matching
// the CUDA device a process saw to the physical GPU through
// TARGET_INFO_CUDA_DEVICE (per process), else TARGET_INFO_GPU.cuDevice,
// else the GPU id itself. Exports without these tables leave Devices empty.
func (r *reader) readDevices() error {
	var gpus []gpuInfo
	q, ok, err := r.d.sel("TARGET_INFO_GPU", []string{"id"}, []string{"cuDevice", "name", "totalMemory", "smCount",
		"computeMajor", "computeMinor"}, "")
	if err != nil {
		return err
	}
	if ok {
		err = r.d.each("reading TARGET_INFO_GPU", q, nil, func(scan func(...any) error) error {
			var g gpuInfo
			var name nullString
			if err := scan(&g.id, &g.cuDevice, &name, &g.mem, &g.sms, &g.major, &g.minor); err != nil {
				return err
			}
			g.name = name.String
			gpus = append(gpus, g)
			return nil
		})
		if err != nil {
			return err
		}
	}
	type procDev struct{ pid, cuda int64 }
	cudaDev := map[procDev][2]nullInt{} // -> gpuId, numMultiprocessors
	q, ok, err = r.d.sel("TARGET_INFO_CUDA_DEVICE", []string{"cudaId"}, []string{"gpuId", "pid", "numMultiprocessors"}, "")
	if err != nil {
		return err
	}
	if ok {
		err = r.d.each("reading TARGET_INFO_CUDA_DEVICE", q, nil, func(scan func(...any) error) error {
			var cuda int64
			var gpuID, pid, sms nullInt
			if err := scan(&cuda, &gpuID, &pid, &sms); err != nil {
				return err
			}
			cudaDev[procDev{pid.Int64, cuda}] = [2]nullInt{gpuID, sms}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for _, u := range r.units {
		var g *gpuInfo
		cd, hasCD := cudaDev[procDev{u.PID, int64(u.Device)}]
		if hasCD && cd[0].Valid {
			g = findGPU(gpus, func(x *gpuInfo) bool { return x.id.Int64 == cd[0].Int64 })
		}
		if g == nil {
			g = findGPU(gpus, func(x *gpuInfo) bool { return x.cuDevice.Valid && x.cuDevice.Int64 == int64(u.Device) })
		}
		if g == nil {
			g = findGPU(gpus, func(x *gpuInfo) bool { return x.id.Int64 == int64(u.Device) })
		}
		switch {
		case g != nil:
			u.gpuID, u.hasGPUID = g.id.Int64, true
		case hasCD && cd[0].Valid:
			u.gpuID, u.hasGPUID = cd[0].Int64, true
		}
		dp := trace.DeviceProps{ID: int(u.Device)}
		if g != nil {
			dp.Name, dp.TotalGlobalMem, dp.NumSMs = g.name, g.mem.Int64, int(g.sms.Int64)
			dp.ComputeMajor, dp.ComputeMinor = int(g.major.Int64), int(g.minor.Int64)
		}
		if dp.NumSMs == 0 && hasCD {
			dp.NumSMs = int(cd[1].Int64)
		}
		if dp.Name != "" || dp.NumSMs != 0 {
			u.b.t.Devices = []trace.DeviceProps{dp}
		}
	}
	return nil
}

// findGPU returns the only GPU matching ok, or nil (none, or ambiguous).
func findGPU(gpus []gpuInfo, ok func(*gpuInfo) bool) *gpuInfo {
	var found *gpuInfo
	for i := range gpus {
		if ok(&gpus[i]) {
			if found != nil {
				return nil
			}
			found = &gpus[i]
		}
	}
	return found
}

// readMetrics reads GPU metrics samples (nsys --gpu-metrics-devices) as
// counters named as nsys names them ("SMs Active [Throughput %]"). A
// sample belongs to the GPU in the low byte of its typeId; every trace on
// that GPU gets it.
func (r *reader) readMetrics() error {
	type metricKey struct{ typeID, metricID int64 }
	names := map[metricKey]string{}
	q, ok, err := r.d.sel("TARGET_INFO_GPU_METRICS", []string{"typeId", "metricId", "metricName"}, nil, "")
	if err != nil || !ok {
		return err
	}
	err = r.d.each("reading TARGET_INFO_GPU_METRICS", q, nil, func(scan func(...any) error) error {
		var k metricKey
		var name nullString
		if err := scan(&k.typeID, &k.metricID, &name); err != nil {
			return err
		}
		names[k] = name.String
		return nil
	})
	if err != nil {
		return err
	}
	q, ok, err = r.d.sel("GPU_METRICS", []string{"timestamp", "typeId", "metricId", "value"}, nil, "")
	if err != nil || !ok {
		return err
	}
	byGPU := map[int64][]*unit{}
	for _, u := range r.units {
		id := int64(u.Device) // without device tables, assume GPU id = CUDA id
		if u.hasGPUID {
			id = u.gpuID
		}
		byGPU[id] = append(byGPU[id], u)
	}
	type cached struct {
		b  *builder
		mk metricKey
	}
	ids := map[cached]int32{}
	return r.d.each("reading GPU_METRICS", q, nil, func(scan func(...any) error) error {
		var ts, typeID, metricID nullInt
		var v nullFloat
		if err := scan(&ts, &typeID, &metricID, &v); err != nil {
			return err
		}
		// nsys records samples from before the session start with
		// negative times; they describe nothing traced
		if !ts.Valid || ts.Int64 < 0 || !v.Valid {
			return nil
		}
		mk := metricKey{typeID.Int64, metricID.Int64}
		for _, u := range byGPU[typeID.Int64&0xFF] {
			b := u.b
			id, ok := ids[cached{b, mk}]
			if !ok {
				name := names[mk]
				if name == "" {
					name = "gpu_metric_" + strconv.FormatInt(mk.metricID, 10)
				}
				id = b.str.ID(name)
				ids[cached{b, mk}] = id
			}
			c := &b.t.Counters
			c.Device.Append(u.Device)
			c.TS.Append(ts.Int64 + b.base)
			c.Metric.Append(id)
			c.Value.Append(v.Float64)
		}
		return nil
	})
}
