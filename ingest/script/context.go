package script

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Context is what the launch script says about the run: framework, model,
// GPUs and parallelism. A nil field is unknown: nothing is filled by a
// silent guess; every value not read straight from a flag says how it was
// derived in Derived.
type Context struct {
	Framework                                          string // relax, slime, megatron, verl or unknown
	Model, ModelSize, DenseOrMoE, Modality, Mode       *string
	GPUs, Nodes, GPUsPerNode                           *int64
	TP, PP, VPP, CP, EP, ETP, DP                       *int64
	MicroBatch, GlobalBatch                            *int64
	SeqLen, MaxPromptLen, MaxResponseLen               *int64
	Layers, Hidden, FFNHidden, Heads, KVHeads, Experts *int64
	MoETopK, Vocab                                     *int64
	ParamsB, ActiveParamsB                             *float64
	Recompute, Offload, Precision, GPU                 *string
	RolloutTP, MaxTokensPerGPU                         *int64
	Problems                                           []string
	Derived                                            []string
}

func emptyContext() Context { return Context{Framework: "unknown"} }

type ctxBuilder struct {
	s     *Script
	c     *Context
	base  string // the script's file name without .sh
	name  fileName
	byKey map[string][]*Flag
	env   map[string]*Flag
	train string // the training command
}

func extractContext(s *Script) Context {
	c := emptyContext()
	b := &ctxBuilder{s: s, c: &c, byKey: map[string][]*Flag{}, env: map[string]*Flag{}}
	b.base = strings.TrimSuffix(filepath.Base(s.Path), ".sh")
	b.name = parseFileName(b.base)
	for i := range s.Flags {
		f := &s.Flags[i]
		if f.Taken == TakenNo {
			continue
		}
		if f.Command == "env" {
			b.env[f.Flag] = f
			continue
		}
		b.byKey[f.Flag] = append(b.byKey[f.Flag], f)
	}
	for _, p := range s.Problems {
		c.Problems = append(c.Problems, p.Error())
	}
	b.framework()
	b.model()
	b.dims()
	switch c.Framework {
	case "verl":
		b.verl()
	default:
		b.megatronStyle()
	}
	if c.GPUs == nil {
		b.gpusFromName()
	}
	if c.Mode == nil && c.Framework == "unknown" {
		b.relaxMode(b.resource())
	}
	b.nodesFromGPUs()
	b.dp()
	b.params()
	b.modality()
	b.precision()
	b.gpuType()
	return c
}

func (b *ctxBuilder) note(format string, args ...any) {
	n := fmt.Sprintf(format, args...)
	if !contains(b.c.Derived, n) {
		b.c.Derived = append(b.c.Derived, n)
	}
}

// Value states of a flag across its occurrences.
const (
	stAbsent    = iota
	stCertain   // the last occurrence that counts surely runs
	stMaybe     // only in a branch that may or may not run
	stAmbiguous // branches that may run give different values
)

// state follows argparse: the last occurrence wins. An occurrence in a
// branch that may not run keeps the value only when it agrees with what
// came before. Occurrences a launch command used win over arrays no
// command used.
func (b *ctxBuilder) state(key string) (string, int, *Flag) {
	rows := b.byKey[key]
	used := false
	for _, f := range rows {
		used = used || f.Command != ""
	}
	val, st := "", stAbsent
	var last *Flag
	for _, f := range rows {
		if (f.Command != "") != used {
			continue
		}
		v := unquote(f.Value)
		switch {
		case f.Taken == TakenYes:
			val, st, last = v, stCertain, f
		case st == stAbsent:
			val, st, last = v, stMaybe, f
		case v != val:
			st = stAmbiguous
		}
	}
	return val, st, last
}

// get returns a flag's effective value; a value from a branch that may not
// run is noted, one that differs between such branches is unknown.
func (b *ctxBuilder) get(key string) (string, bool) {
	val, st, f := b.state(key)
	switch st {
	case stMaybe:
		b.note("%s: from a branch that may not run (%s)", key, f.Branch)
	case stAmbiguous:
		b.note("%s: unknown, branches that may or may not run set it differently", key)
		return "", false
	}
	return val, st != stAbsent
}

// has reports a switch that is on: present without a value, or with a
// value that is not false.
func (b *ctxBuilder) has(key string) bool {
	v, ok := b.get(key)
	return ok && !isFalse(v)
}

func isFalse(v string) bool {
	switch strings.ToLower(v) {
	case "false", "0", "no", "off", "none", "null":
		return true
	}
	return false
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '\'' && v[len(v)-1] == '\'' || v[0] == '"' && v[len(v)-1] == '"') {
		return v[1 : len(v)-1]
	}
	return v
}

func (b *ctxBuilder) int(key string) *int64 {
	v, ok := b.get(key)
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

func (b *ctxBuilder) envInt(name string) *int64 {
	f := b.env[name]
	if f == nil {
		return nil
	}
	n, err := strconv.ParseInt(unquote(strings.TrimSpace(f.Value)), 10, 64)
	if err != nil {
		return nil
	}
	return &n
}

func firstInt(b *ctxBuilder, keys ...string) *int64 {
	for _, k := range keys {
		if v := b.int(k); v != nil {
			return v
		}
	}
	return nil
}

func ptr[T any](v T) *T { return &v }

func (b *ctxBuilder) framework() {
	c := b.c
	hydra := false
	for k := range b.byKey {
		if strings.HasPrefix(k, "actor_rollout_ref.") || strings.HasPrefix(k, "trainer.") {
			hydra = true
		}
	}
	var names, programs []string
	for _, cmd := range b.s.Commands {
		if cmd.Taken != TakenNo {
			names = append(names, cmd.Name)
			programs = append(programs, filepath.ToSlash(cmd.Program))
		}
	}
	all := strings.Join(names, "\n")
	path := filepath.ToSlash(b.s.Path)
	switch {
	case strings.Contains(all, "relax.") || strings.Contains(strings.Join(programs, "\n"), "relax/"):
		c.Framework = "relax"
	case strings.Contains(all, "verl.") || hydra:
		c.Framework = "verl"
	case slimeTrainRE.MatchString(all) && strings.Contains(all, "ray job submit") &&
		(b.byKey["--actor-num-gpus-per-node"] != nil || b.byKey["--actor-num-nodes"] != nil || strings.Contains(strings.ToLower(path), "slime")):
		c.Framework = "slime"
	case megatronTrainRE.MatchString(all) && b.int("--tensor-model-parallel-size") != nil,
		strings.Contains(all, "pretrain_"):
		c.Framework = "megatron"
	default:
		for _, fw := range []string{"relax", "slime", "verl", "megatron"} {
			if strings.Contains(strings.ToLower(path), "/"+fw+"/") {
				c.Framework = fw
				b.note("framework: from the folder name (no launch command says)")
				break
			}
		}
	}
	for _, n := range names {
		if strings.Contains(n, "relax.") || strings.Contains(n, "verl.") || strings.HasPrefix(n, "python") && strings.HasSuffix(n, ".py") ||
			strings.Contains(n, "torchrun ") || strings.Contains(n, "pretrain_") {
			b.train = n
		}
	}
}

// fileName is what the file-name convention run-<model>-<size>-<N>x<gpu>(-tag)*.sh says.
type fileName struct {
	model string
	gpus  *int64
	acc   string // gpu, npu, klx, h100 ...
	tags  map[string]bool
}

var (
	slimeTrainRE    = regexp.MustCompile(`(?m)^python[0-9.]* train(_async)?\.py$`)
	megatronTrainRE = regexp.MustCompile(`(?m)(pretrain_\w+|train_\w+)\.py$`)
	gpuTokRE        = regexp.MustCompile(`(?i)(?:^|[-_])(\d+)x(gpu|npu|klx|xpu|h100|h800|h20|h200|a100|a800|b200|gb200|mi300x|mi250x?|l40s?)(?:[-_.]|$)`)
	sizeRE          = regexp.MustCompile(`(?i)(?:^|[-_.])(\d+(?:\.\d+)?)([bm])(?:-a(\d+(?:\.\d+)?)b)?(?:$|[-_.])`)
	gpuNameRE       = regexp.MustCompile(`(?i)(?:^|[-_])(h100|h800|h20|h200|a100|a800|b200|gb200|mi300x|mi250x?|l40s?|4090)(?:[-_.]|$)`)
)

func parseFileName(base string) fileName {
	fn := fileName{tags: map[string]bool{}}
	rest := base
	for _, p := range []string{"run-", "run_", "train_", "train-"} {
		rest = strings.TrimPrefix(rest, p)
	}
	modelPart := rest
	if m := gpuTokRE.FindStringSubmatchIndex(rest); m != nil {
		if n, err := strconv.ParseInt(rest[m[2]:m[3]], 10, 64); err == nil && n > 0 {
			fn.gpus = &n
		}
		fn.acc = strings.ToLower(rest[m[4]:m[5]])
		modelPart = rest[:m[0]]
		for _, t := range strings.FieldsFunc(rest[m[1]:], func(r rune) bool { return r == '-' || r == '_' }) {
			fn.tags[strings.ToLower(t)] = true
		}
	}
	if m := sizeRE.FindStringSubmatchIndex(modelPart); m != nil {
		end := m[1]
		if end > 0 && strings.ContainsRune("-_.", rune(modelPart[end-1])) {
			end--
		}
		for _, t := range strings.FieldsFunc(modelPart[end:], func(r rune) bool { return r == '-' || r == '_' }) {
			fn.tags[strings.ToLower(t)] = true
		}
		modelPart = modelPart[:end]
	}
	fn.model = strings.ReplaceAll(strings.Trim(modelPart, "-_"), "_", "-")
	return fn
}

// modelSize reads "35B-A3B" out of a model name: total and active billions.
func modelSize(name string) (size string, total, active *float64) {
	m := sizeRE.FindStringSubmatch(name)
	if m == nil {
		return "", nil, nil
	}
	t, _ := strconv.ParseFloat(m[1], 64)
	unit := strings.ToUpper(m[2])
	size = m[1] + unit
	if unit == "M" {
		t /= 1000
	}
	total = &t
	if m[3] != "" {
		a, _ := strconv.ParseFloat(m[3], 64)
		active = &a
		size += "-A" + m[3] + "B"
	}
	return size, total, active
}

func (b *ctxBuilder) model() {
	c := b.c
	var name, how string
	for _, src := range b.s.Sources {
		if src.Resolved != "" && b.modelConfig(src.Resolved) {
			name, how = strings.TrimSuffix(filepath.Base(src.Resolved), ".sh"), "the sourced model config"
		}
	}
	if name == "" && c.Framework == "verl" {
		if p, ok := b.get("actor_rollout_ref.model.path"); ok {
			if base := filepath.Base(strings.TrimRight(p, "/")); !strings.Contains(base, "$") {
				name, how = base, "actor_rollout_ref.model.path"
			}
		}
	}
	if name == "" && b.name.model != "" {
		name, how = b.name.model, "the file name"
		if size, _, _ := modelSize(b.base); size != "" && !strings.Contains(strings.ToUpper(name), strings.ToUpper(strings.Split(size, "-")[0])) {
			name += "-" + size
		}
	}
	if name == "" {
		return
	}
	c.Model = &name
	if how != "the sourced model config" {
		b.note("model: from %s", how)
	}
	size, total, active := modelSize(name)
	if size == "" {
		size, total, active = modelSize(b.base)
	}
	if size != "" {
		c.ModelSize = &size
		c.ParamsB = total
		c.ActiveParamsB = active
		b.note("params_b: the size in the model name (%s)", size)
	}
}

// modelConfig reports whether a sourced file defined the model (a
// MODEL_ARGS array, or a file in a models folder).
func (b *ctxBuilder) modelConfig(file string) bool {
	if strings.Contains(filepath.ToSlash(file), "/models/") {
		return true
	}
	for _, f := range b.s.Flags {
		if f.File == file && f.Array == "MODEL_ARGS" {
			return true
		}
	}
	return false
}

// resource reads relax's --resource '{"actor": [1, 8], "rollout": [1, 8]}':
// per role [count, GPUs each].
func (b *ctxBuilder) resource() map[string]int64 {
	v, ok := b.get("--resource")
	if !ok {
		return nil
	}
	var raw map[string][]float64
	if json.Unmarshal([]byte(v), &raw) != nil {
		return nil
	}
	out := map[string]int64{}
	for role, xs := range raw {
		n := int64(1)
		for _, x := range xs {
			n *= int64(x)
		}
		out[role] = n
	}
	return out
}
