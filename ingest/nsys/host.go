package nsys

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/trainscope/trainscope/gpu"
)

// apiInfo is what a runtime table name says.
type apiInfo struct {
	kind      kind
	name, cat int32
}

// apiVersion is the "_v7000" nsys appends to CUDA API names
// (cudaLaunchKernel_v7000); Kineto and the detectors use the bare name.
var apiVersion = regexp.MustCompile(`_v\d+$`)

// readRuntime reads CUDA runtime and driver calls. A call that launched
// work goes to the trace of the device that ran it; any other call to its
// process's first device.
func (r *reader) readRuntime() error {
	const table = "CUPTI_ACTIVITY_KIND_RUNTIME"
	q, ok, err := r.d.sel(table, []string{"start", "end", "nameId"}, []string{"globalTid", "correlationId", "eventClass"}, "")
	if err != nil || !ok {
		return err
	}
	return r.d.each("reading "+table, q, nil, func(scan func(...any) error) error {
		var start, end, nameID int64
		var gtid, corr, class nullInt
		if err := scan(&start, &end, &nameID, &gtid, &corr, &class); err != nil {
			return err
		}
		gpid := gpidOf(gtid.Int64)
		var u *unit
		if corr.Valid && r.multi[gpid] {
			u = r.launch[[2]int64{gpid, corr.Int64}]
		}
		if u == nil {
			if u = r.hostUnit(gpid); u == nil {
				return nil
			}
		}
		b := u.b
		ai := r.api(b, nameID, class)
		b.add(&row{kind: ai.kind, cat: ai.cat, name: ai.name, start: start, end: end,
			pid: pidOf(gpid), tid: tidOf(gtid.Int64), corr: corr})
		return nil
	})
}

func (r *reader) api(b *builder, nameID int64, class nullInt) apiInfo {
	if ai, ok := b.apis[nameID]; ok {
		return ai
	}
	name := apiVersion.ReplaceAllString(r.strs[nameID], "")
	if name == "" {
		name = "unknown API call"
	}
	// eventClass 1 is TRACE_PROCESS_EVENT_CUDA_DRIVER; without the column,
	// driver calls are the cu* names.
	driver := class.Valid && class.Int64 == 1 ||
		!class.Valid && strings.HasPrefix(name, "cu") && !strings.HasPrefix(name, "cuda")
	ai := apiInfo{kind: kRuntime, name: b.str.ID(name), cat: b.cat("cuda_runtime")}
	if driver {
		ai.kind, ai.cat = kDriver, b.cat("cuda_driver")
	}
	b.apis[nameID] = ai
	return ai
}

// NVTX event types (ENUM_NSYS_EVENT_TYPE) this reader uses.
const (
	nvtxPushPop      = 59
	nvtxStartEnd     = 60
	nvtxtPushPop     = 70
	nvtxtStartEnd    = 71
	nvtxDomainCreate = 75
)

// readNVTX reads NVTX push/pop and start/end ranges as annotations (ATen
// operators from emit_nvtx as cpu_op), and steps from their names.
func (r *reader) readNVTX() error {
	const table = "NVTX_EVENTS"
	domains := map[int64]string{}
	q, ok, err := r.d.sel(table, []string{"eventType"}, []string{"domainId", "text", "textId"}, "WHERE eventType = ?")
	if err != nil || !ok {
		return err
	}
	err = r.d.each("reading NVTX domains", q, []any{nvtxDomainCreate}, func(scan func(...any) error) error {
		var et int64
		var dom, textID nullInt
		var text nullString
		if err := scan(&et, &dom, &text, &textID); err != nil {
			return err
		}
		if dom.Valid {
			domains[dom.Int64] = r.text(text, textID)
		}
		return nil
	})
	if err != nil {
		return err
	}
	q, _, err = r.d.sel(table, []string{"start", "eventType"}, []string{"end", "text", "textId", "globalTid", "domainId"},
		"WHERE eventType IN (?, ?, ?, ?)")
	if err != nil {
		return err
	}
	return r.d.each("reading "+table, q, []any{nvtxPushPop, nvtxStartEnd, nvtxtPushPop, nvtxtStartEnd},
		func(scan func(...any) error) error {
			var start, et int64
			var end, textID, gtid, dom nullInt
			var text nullString
			if err := scan(&start, &et, &end, &text, &textID, &gtid, &dom); err != nil {
				return err
			}
			gpid := gpidOf(gtid.Int64)
			u := r.hostUnit(gpid)
			if u == nil {
				return nil
			}
			b := u.b
			if !end.Valid {
				b.unterminated++
				return nil
			}
			domain := domains[dom.Int64]
			ni := classifyNVTX(r.text(text, textID), domain)
			cat := "nvtx"
			if domain != "" {
				cat += ":" + domain
			}
			i := b.add(&row{kind: ni.kind, cat: b.cat(cat), name: b.str.ID(ni.name), start: start, end: end.Int64,
				pid: pidOf(gpid), tid: tidOf(gtid.Int64)})
			if ni.coll != "" {
				b.s.CollName.Set(i, b.str.ID(ni.coll))
				b.s.MarkDetail(i)
			}
			if ni.step >= 0 {
				// a step spans every device of its process
				units := r.byProc[gpid]
				if len(units) == 0 {
					units = []*unit{u}
				}
				for _, v := range units {
					v.b.step(ni.step, ni.profiler, start, end.Int64)
				}
			}
			return nil
		})
}

// text is an NVTX message: inline text, else a registered string.
func (r *reader) text(text nullString, id nullInt) string {
	if text.Valid && text.String != "" {
		return text.String
	}
	if id.Valid {
		return r.strs[id.Int64]
	}
	return ""
}

// nvtxInfo is what an NVTX range's text says.
type nvtxInfo struct {
	kind     kind
	name     string
	step     int32 // -1: not a step range
	profiler bool  // a ProfilerStep#N range
	coll     string
}

// Step patterns, matched against the whole range name (after the
// emit_nvtx suffix is cut): "ProfilerStep#12"; and "step 12", "Step_12",
// "step#12", "iteration 12", "iter:12", "train_step 12", "training step
// 12/100" (case-insensitive). "optimizer_step" and names with other text
// are not steps.
var (
	profilerStep = regexp.MustCompile(`^ProfilerStep#\s*(\d+)$`)
	otherStep    = regexp.MustCompile(`(?i)^(?:train(?:ing)?[ _-]?)?(?:step|iteration|iter)[ _#:=-]*(\d+)(?:\s*/\s*\d+)?$`)
	// emit_nvtx (nsys --pytorch=autograd-nvtx) appends these to operator names
	observerKeys = []string{", seq = ", ", op_id = ", ", sizes = ", ", input_op_ids = "}
	// collectives is what gpu.NormalizeCollective may return for a real one
	collectives = map[string]bool{"allreduce": true, "allgather": true, "reducescatter": true, "alltoall": true,
		"broadcast": true, "sendrecv": true, "reduce": true, "send": true, "recv": true, "barrier": true,
		"gather": true, "scatter": true}
)

func classifyNVTX(text, domain string) nvtxInfo {
	ni := nvtxInfo{kind: kAnnotation, name: text, step: -1}
	if ni.name == "" {
		ni.name = "unnamed NVTX range"
		return ni
	}
	cut := -1
	for _, k := range observerKeys {
		if i := strings.Index(ni.name, k); i > 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	observed := cut > 0
	if observed {
		ni.name = ni.name[:cut]
	}
	if m := profilerStep.FindStringSubmatch(ni.name); m != nil {
		ni.step = atoi32(m[1])
		ni.profiler = ni.step >= 0
		return ni
	}
	if m := otherStep.FindStringSubmatch(ni.name); m != nil {
		ni.step = atoi32(m[1])
		return ni
	}
	if opLike(ni.name) && (observed || strings.HasPrefix(ni.name, "aten::")) {
		ni.kind = kCPUOp
		return ni
	}
	// NCCL's own NVTX ranges: ncclAllReduce (legacy) or AllReduce in the
	// NCCL domain (NCCL >= 2.28 with nsys's advanced NCCL trace)
	if base, ok := strings.CutPrefix(ni.name, "nccl"); ok || domain == "NCCL" {
		if c := gpu.NormalizeCollective(base); collectives[c] {
			ni.coll = c
		}
	}
	return ni
}

// opLike: an operator name such as aten::add or detach_, not a sentence.
func opLike(s string) bool {
	for _, c := range s {
		if !(c == '_' || c == ':' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// atoi32 parses a step number matched by the patterns above; -1 (no
// step) when it overflows int32.
func atoi32(s string) int32 {
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return -1
	}
	return int32(v)
}
