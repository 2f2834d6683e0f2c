package script

import (
	"strings"
)

// GPUs, nodes, mode and parallelism of Megatron-style launchers (relax,
// slime, Megatron-LM): flags first, then the file name, then defaults,
// each derivation noted.

func (b *ctxBuilder) megatronStyle() {
	c := b.c
	switch c.Framework {
	case "relax":
		b.relaxGPUs()
	case "unknown":
		if b.byKey["--resource"] != nil {
			b.relaxGPUs()
		}
	case "slime":
		b.slimeGPUs()
	case "megatron":
		nproc := firstInt(b, "--nproc_per_node", "--nproc-per-node")
		nnodes := firstInt(b, "--nnodes")
		c.GPUsPerNode, c.Nodes = nproc, nnodes
		if nproc != nil && nnodes != nil {
			c.GPUs = ptr(*nproc * *nnodes)
			b.note("gpus: --nproc_per_node × --nnodes")
		}
	}
	c.TP = b.int("--tensor-model-parallel-size")
	c.PP = b.int("--pipeline-model-parallel-size")
	c.CP = b.int("--context-parallel-size")
	c.EP = b.int("--expert-model-parallel-size")
	c.ETP = b.int("--expert-tensor-parallel-size")
	if b.train != "" && c.Framework != "unknown" {
		for _, d := range []struct {
			p    **int64
			name string
		}{{&c.TP, "tp"}, {&c.PP, "pp"}, {&c.CP, "cp"}, {&c.EP, "ep"}} {
			if *d.p == nil {
				*d.p = ptr(int64(1))
				b.note("%s: Megatron default 1 (flag absent)", d.name)
			}
		}
		if c.ETP == nil && c.TP != nil && isMoE(c) {
			c.ETP = ptr(*c.TP)
			b.note("etp: Megatron default, equal to tp (flag absent)")
		}
	}
	c.VPP = b.int("--virtual-pipeline-model-parallel-size")
	if n := b.int("--num-layers-per-virtual-pipeline-stage"); c.VPP == nil && n != nil && *n > 0 && c.Layers != nil && c.PP != nil && *c.PP > 0 {
		if per := *c.Layers / *c.PP; per%*n == 0 && *c.Layers%*c.PP == 0 {
			c.VPP = ptr(per / *n)
			b.note("vpp: layers/pp/--num-layers-per-virtual-pipeline-stage = %d/%d/%d", *c.Layers, *c.PP, *n)
		}
	}
	c.MicroBatch = b.int("--micro-batch-size")
	c.GlobalBatch = b.int("--global-batch-size")
	c.SeqLen = firstInt(b, "--seq-length", "--max-seq-len")
	c.MaxPromptLen = b.int("--rollout-max-prompt-len")
	c.MaxResponseLen = b.int("--rollout-max-response-len")
	c.MaxTokensPerGPU = b.int("--max-tokens-per-gpu")
	if c.RolloutTP = b.int("--rollout-num-gpus-per-engine"); c.RolloutTP != nil {
		b.note("rollout_tp: --rollout-num-gpus-per-engine (GPUs per SGLang engine)")
	}
	if g, ok := b.get("--recompute-granularity"); ok {
		parts := []string{g}
		for _, k := range []string{"--recompute-method", "--recompute-num-layers"} {
			if v, ok := b.get(k); ok {
				parts = append(parts, v)
			}
		}
		c.Recompute = ptr(strings.Join(parts, "/"))
	}
	var off []string
	for _, k := range b.keys() {
		if strings.HasPrefix(k, "--") && (strings.Contains(k, "offload") || k == "--overlap-cpu-optimizer-d2h-h2d" || k == "--use-precision-aware-optimizer") && b.has(k) {
			off = append(off, strings.TrimPrefix(k, "--"))
		}
	}
	if len(off) > 0 {
		c.Offload = ptr(strings.Join(off, ","))
	}
}

// keys lists the flags in the order they first appear.
func (b *ctxBuilder) keys() []string {
	var out []string
	seen := map[string]bool{}
	for _, f := range b.s.Flags {
		if f.Taken != TakenNo && f.Command != "env" && !seen[f.Flag] {
			seen[f.Flag] = true
			out = append(out, f.Flag)
		}
	}
	return out
}

func (b *ctxBuilder) relaxGPUs() {
	c := b.c
	res := b.resource()
	b.relaxMode(res)
	if res == nil || c.Mode == nil {
		b.gpusFromName()
		return
	}
	var total, largest int64
	for _, n := range res {
		total += n
		largest = max(largest, n)
	}
	if c.Mode != nil && (*c.Mode == "fully-async" || *c.Mode == "hybrid") {
		c.GPUs = ptr(total)
		b.note("gpus: sum of the --resource roles (%s: roles hold GPUs of their own)", *c.Mode)
	} else {
		c.GPUs = ptr(largest)
		b.note("gpus: largest --resource role (roles share GPUs)")
	}
	b.checkName()
}

func hasKey(m map[string]int64, k string) bool { _, ok := m[k]; return ok }

// relaxMode picks the mode from --hybrid, --fully-async and --colocate;
// when those sit in branches that may or may not run, the mode is unknown.
func (b *ctxBuilder) relaxMode(res map[string]int64) {
	var maybe []string
	for _, m := range []struct{ flag, mode string }{{"--hybrid", "hybrid"}, {"--fully-async", "fully-async"}, {"--colocate", "colocate"}} {
		v, st, _ := b.state(m.flag)
		if isFalse(v) {
			continue
		}
		switch st {
		case stCertain:
			b.c.Mode = ptr(m.mode)
			return
		case stMaybe, stAmbiguous:
			maybe = append(maybe, m.flag)
		}
	}
	switch {
	case len(maybe) == 1:
		_, _, f := b.state(maybe[0])
		b.c.Mode = ptr(strings.TrimPrefix(maybe[0], "--"))
		b.note("mode: %s is in a branch that may not run (%s)", maybe[0], f.Branch)
	case len(maybe) > 1:
		b.note("mode: unknown, %s sit in branches whose conditions are unknown", strings.Join(maybe, " and "))
	case res["sft"] != 0 || hasKey(res, "sft"):
		b.c.Mode = ptr("sft")
		b.note("mode: sft, --resource has an sft role")
	default:
		b.modeFromName()
	}
}

func (b *ctxBuilder) slimeGPUs() {
	c := b.c
	switch {
	case strings.Contains(b.train, "train_async"):
		c.Mode = ptr("async")
	case b.has("--colocate"):
		c.Mode = ptr("colocate")
	default:
		c.Mode = ptr("sync")
		b.note("mode: sync, actor and rollout on GPUs of their own (no --colocate)")
	}
	nodes, gpn := b.int("--actor-num-nodes"), b.int("--actor-num-gpus-per-node")
	c.Nodes = nodes
	if nodes != nil && gpn != nil {
		n := *nodes * *gpn
		if *c.Mode != "colocate" {
			r := b.int("--rollout-num-gpus")
			if r == nil {
				b.note("gpus: unknown, --rollout-num-gpus not set")
				return
			}
			n += *r
		}
		c.GPUs = ptr(n)
		b.note("gpus: --actor-num-nodes × --actor-num-gpus-per-node (+ --rollout-num-gpus unless colocated)")
	}
	if per := b.int("--num-gpus"); per != nil {
		c.GPUsPerNode = per
		b.note("gpus_per_node: ray start --num-gpus")
	}
	b.checkName()
}

func (b *ctxBuilder) modeFromName() {
	t := b.name.tags
	switch {
	case t["hybrid"]:
		b.c.Mode = ptr("hybrid")
	case t["async"]:
		b.c.Mode = ptr("fully-async")
	case t["colocate"]:
		b.c.Mode = ptr("colocate")
	default:
		return
	}
	b.note("mode: from the file name")
}

func (b *ctxBuilder) gpusFromName() {
	if b.name.gpus != nil && b.c.GPUs == nil {
		b.c.GPUs = b.name.gpus
		b.note("gpus: from the file name")
	}
}

func (b *ctxBuilder) checkName() {
	if b.c.GPUs == nil {
		b.gpusFromName()
		return
	}
	if b.name.gpus != nil && *b.name.gpus != *b.c.GPUs {
		b.note("gpus: the flags say %d, the file name says %d", *b.c.GPUs, *b.name.gpus)
	}
}

// nodesFromGPUs fills nodes and GPUs per node from the total where the
// flags do not say: from the visible-devices list, else assuming 8 per node.
func (b *ctxBuilder) nodesFromGPUs() {
	c := b.c
	if c.GPUs == nil || *c.GPUs <= 0 || c.Nodes != nil && c.GPUsPerNode != nil {
		return
	}
	g := *c.GPUs
	if c.Nodes != nil && *c.Nodes > 0 && g%*c.Nodes == 0 {
		c.GPUsPerNode = ptr(g / *c.Nodes)
		b.note("gpus_per_node: gpus/nodes")
		return
	}
	if c.GPUsPerNode != nil && *c.GPUsPerNode > 0 && g%*c.GPUsPerNode == 0 {
		c.Nodes = ptr(g / *c.GPUsPerNode)
		b.note("nodes: gpus/gpus_per_node")
		return
	}
	per, how := int64(8), "assuming 8 GPUs per node"
	for _, env := range []string{"ASCEND_RT_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"} {
		if f := b.env[env]; f != nil && !strings.Contains(f.Value, "$") && f.Value != "" {
			per, how = int64(len(strings.Split(unquote(f.Value), ","))), "devices listed in "+env
		}
	}
	if g <= per {
		c.Nodes, c.GPUsPerNode = ptr(int64(1)), ptr(g)
	} else if g%per == 0 {
		c.Nodes, c.GPUsPerNode = ptr(g/per), ptr(per)
	} else {
		return
	}
	b.note("nodes, gpus_per_node: from gpus, %s", how)
}

// dp is the data-parallel size of training: training GPUs / (tp·pp·cp).
func (b *ctxBuilder) dp() {
	c := b.c
	train := c.GPUs
	if c.Framework == "relax" {
		train = nil
		if r := b.resource(); r != nil && r["actor"] > 0 {
			train = ptr(r["actor"])
		} else if c.Mode != nil && *c.Mode == "colocate" {
			train = c.GPUs
		}
	}
	if c.Framework == "slime" {
		if n, g := b.int("--actor-num-nodes"), b.int("--actor-num-gpus-per-node"); n != nil && g != nil {
			train = ptr(*n * *g)
		}
	}
	if c.Framework == "verl" {
		if n, g := b.int("trainer.nnodes"), b.int("trainer.n_gpus_per_node"); n != nil && g != nil {
			train = ptr(*n * *g)
		}
	}
	if train == nil || c.TP == nil || c.PP == nil || c.CP == nil {
		return
	}
	m := *c.TP * *c.PP * *c.CP
	if m <= 0 || *train%m != 0 {
		b.note("dp: not derived: tp×pp×cp = %d does not divide the %d training GPUs", m, *train)
		return
	}
	c.DP = ptr(*train / m)
	b.note("dp: training GPUs / (tp×pp×cp) = %d/%d", *train, m)
}
