package script

import (
	"encoding/json"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// Model dimensions, the parameter estimate, modality, precision and the
// GPU type; and verl, whose settings are Hydra keys rather than flags.

func isMoE(c *Context) bool {
	return c.Experts != nil && *c.Experts > 1 || c.DenseOrMoE != nil && *c.DenseOrMoE == "moe"
}

func (b *ctxBuilder) dims() {
	c := b.c
	c.Layers = b.int("--num-layers")
	c.Hidden = b.int("--hidden-size")
	c.FFNHidden = b.int("--ffn-hidden-size")
	c.Heads = b.int("--num-attention-heads")
	c.Experts = b.int("--num-experts")
	c.MoETopK = b.int("--moe-router-topk")
	c.Vocab = firstInt(b, "--vocab-size", "--padded-vocab-size")
	if b.has("--group-query-attention") {
		c.KVHeads = b.int("--num-query-groups")
	}
	if c.KVHeads == nil && c.Heads != nil && !b.has("--group-query-attention") {
		c.KVHeads = c.Heads
		b.note("kv_heads: equal to heads (no --group-query-attention)")
	}
	if c.FFNHidden == nil && c.Hidden != nil && c.Framework == "megatron" && !b.has("--swiglu") {
		c.FFNHidden = ptr(4 * *c.Hidden)
		b.note("ffn_hidden: Megatron default 4×hidden (flag absent)")
	}
	name := ""
	if c.Model != nil {
		name = strings.ToLower(*c.Model)
	}
	switch {
	case c.Experts != nil && *c.Experts > 1:
		c.DenseOrMoE = ptr("moe")
	case c.ActiveParamsB != nil:
		c.DenseOrMoE = ptr("moe")
		b.note("dense_or_moe: from the active size in the model name")
	case strings.Contains(name, "moe") || strings.Contains(strings.ToLower(b.base), "moe"):
		c.DenseOrMoE = ptr("moe")
		b.note("dense_or_moe: the name says moe")
	case c.Layers != nil && c.Hidden != nil:
		c.DenseOrMoE = ptr("dense")
		b.note("dense_or_moe: dense, the model config has no --num-experts")
	case c.ParamsB != nil:
		c.DenseOrMoE = ptr("dense")
		b.note("dense_or_moe: dense, the model name has no active size (-A<n>B)")
	}
	if c.DenseOrMoE != nil && *c.DenseOrMoE == "dense" && c.ParamsB != nil && c.ActiveParamsB == nil {
		c.ActiveParamsB = c.ParamsB
		b.note("active_params_b: dense, every parameter is active")
	}
}

var (
	layerFreqRE  = regexp.MustCompile(`^\[0\]\*(\d+)\+\[1\]\*(\d+)$`)
	visionNameRE = regexp.MustCompile(`(^|[-_.])(vl|ocr|vision)`)
)

// moeLayers is how many layers hold experts: from --moe-layer-freq
// (N, [0]*a+[1]*b or a 0/1 list), else FIRST_K_DENSE_REPLACE, else all.
func (b *ctxBuilder) moeLayers(layers int64) int64 {
	if v, ok := b.get("--moe-layer-freq"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n > 0 {
			return layers / n
		}
		if m := layerFreqRE.FindStringSubmatch(strings.ReplaceAll(v, " ", "")); m != nil {
			n, _ := strconv.ParseInt(m[2], 10, 64)
			return n
		}
		var list []int64
		if json.Unmarshal([]byte(v), &list) == nil && len(list) > 0 {
			var n int64
			for _, x := range list {
				n += x
			}
			return n
		}
	}
	if k := b.envInt("FIRST_K_DENSE_REPLACE"); k != nil && *k <= layers {
		return layers - *k
	}
	b.note("params_b: every layer taken as an expert layer (--moe-layer-freq unknown)")
	return layers
}

// params estimates total and active parameters from the model config when
// the model name does not state them: attention (GQA or MLA), MLP
// (SwiGLU: 3 matrices), experts, shared experts, router and embeddings.
// Norms and biases are left out; the estimate is within a few percent.
func (b *ctxBuilder) params() {
	c := b.c
	if c.ParamsB != nil || c.Layers == nil || c.Hidden == nil || c.Heads == nil || c.Vocab == nil {
		return
	}
	L, h, heads := float64(*c.Layers), float64(*c.Hidden), float64(*c.Heads)
	f := func(key string, def float64) float64 {
		if v := b.int(key); v != nil {
			return float64(*v)
		}
		return def
	}
	kvc := f("--kv-channels", h/heads)
	kvh := heads
	if c.KVHeads != nil {
		kvh = float64(*c.KVHeads)
	}
	var attn float64
	if b.has("--multi-latent-attention") {
		ql, kl := f("--q-lora-rank", 0), f("--kv-lora-rank", 512)
		qk, rope, vd := f("--qk-head-dim", 128), f("--qk-pos-emb-head-dim", 64), f("--v-head-dim", 128)
		q := h * heads * (qk + rope)
		if ql > 0 {
			q = h*ql + ql*heads*(qk+rope)
		}
		attn = q + h*(kl+rope) + kl*heads*(qk+vd) + heads*vd*h
	} else {
		gate := 1.0
		if b.has("--attention-output-gate") {
			gate = 2
		}
		attn = h*heads*kvc*gate + 2*h*kvh*kvc + heads*kvc*h
	}
	mats := 2.0
	if b.has("--swiglu") {
		mats = 3
	}
	mlp := func(ffn float64) float64 { return mats * h * ffn }
	emb := float64(*c.Vocab) * h
	if b.has("--untie-embeddings-and-output-weights") {
		emb *= 2
	}
	ffn := 0.0
	if c.FFNHidden != nil {
		ffn = float64(*c.FFNHidden)
	}
	total, active := emb+L*attn, emb+L*attn
	if isMoE(c) && c.Experts != nil {
		moeL := float64(b.moeLayers(*c.Layers))
		e, k := float64(*c.Experts), f("--moe-router-topk", 1)
		moeFFN := f("--moe-ffn-hidden-size", ffn)
		shared := mlp(f("--moe-shared-expert-intermediate-size", 0))
		total += moeL*(e*mlp(moeFFN)+shared+h*e) + (L-moeL)*mlp(ffn)
		active += moeL*(k*mlp(moeFFN)+shared+h*e) + (L-moeL)*mlp(ffn)
	} else {
		if c.FFNHidden == nil {
			return
		}
		total += L * mlp(ffn)
		active = total
	}
	c.ParamsB = ptr(round2(total / 1e9))
	c.ActiveParamsB = ptr(round2(active / 1e9))
	b.note("params_b, active_params_b: estimated from the model config (attention, MLP, experts, embeddings; norms left out)")
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

func (b *ctxBuilder) modality() {
	c := b.c
	name := ""
	if c.Model != nil {
		name = strings.ToLower(*c.Model)
	}
	if v, ok := b.get("--multimodal-keys"); ok {
		var keys map[string]any
		if json.Unmarshal([]byte(v), &keys) == nil && len(keys) > 0 {
			var ks []string
			for k := range keys {
				ks = append(ks, k)
			}
			sort.Strings(ks)
			switch {
			case len(ks) == 1 && (ks[0] == "image" || ks[0] == "video"):
				c.Modality = ptr(ks[0])
			case strings.Contains(name, "omni"):
				c.Modality = ptr("omni")
			default:
				c.Modality = ptr("multimodal")
			}
			b.note("modality: --multimodal-keys %s", strings.Join(ks, ","))
			return
		}
	}
	t := b.name.tags
	switch {
	case t["video"]:
		c.Modality = ptr("video")
	case t["image"]:
		c.Modality = ptr("image")
	case t["omni"] || strings.Contains(name, "omni"):
		c.Modality = ptr("omni")
	case visionNameRE.MatchString(name) || strings.Contains(name, "ocr"):
		c.Modality = ptr("multimodal")
	case strings.Contains(b.s.Path, "/multimodal/"):
		c.Modality = ptr("multimodal")
	case b.train != "":
		c.Modality = ptr("text")
		b.note("modality: text, no multimodal keys, tags or model name")
		return
	default:
		return
	}
	b.note("modality: from the file or model name")
}

func (b *ctxBuilder) precision() {
	c := b.c
	var p string
	switch {
	case b.has("--fp8-format") || b.has("--fp8"):
		p = "fp8"
	case b.has("--fp16"):
		p = "fp16"
	case b.has("--bf16"):
		p = "bf16"
	}
	tag := ""
	for _, t := range []string{"int4", "int8", "fp8", "nvfp4", "mxfp8", "fp16", "bf16"} {
		if b.name.tags[t] || strings.Contains(strings.ToLower(b.base), "-"+t+"-") || strings.Contains(strings.ToLower(b.base), "_"+t+"_") {
			tag = t
			break
		}
	}
	switch {
	case tag == "" || tag == p:
	case p == "":
		p = tag
		b.note("precision: from the file name")
	default:
		p += "+" + tag
		b.note("precision: %s from the flags, %s from the file name", strings.Split(p, "+")[0], tag)
	}
	if p != "" {
		c.Precision = &p
	}
}

func (b *ctxBuilder) gpuType() {
	c := b.c
	switch acc := b.name.acc; acc {
	case "", "gpu":
	case "npu", "klx", "xpu":
		c.GPU = ptr(strings.ToUpper(acc))
	default:
		c.GPU = ptr(strings.ToUpper(acc))
	}
	if c.GPU == nil {
		if m := gpuNameRE.FindStringSubmatch(b.base); m != nil {
			c.GPU = ptr(strings.ToUpper(m[1]))
		}
	}
	if c.GPU == nil && b.env["ASCEND_RT_VISIBLE_DEVICES"] != nil {
		c.GPU = ptr("NPU")
		b.note("gpu: NPU, ASCEND_RT_VISIBLE_DEVICES is set")
	}
}

func (b *ctxBuilder) verl() {
	c := b.c
	const actor = "actor_rollout_ref.actor."
	megatron := false
	for k := range b.byKey {
		if strings.Contains(k, ".megatron.") {
			megatron = true
		}
	}
	if megatron {
		m := actor + "megatron."
		c.TP = b.int(m + "tensor_model_parallel_size")
		c.PP = b.int(m + "pipeline_model_parallel_size")
		c.VPP = b.int(m + "virtual_pipeline_model_parallel_size")
		c.CP = b.int(m + "context_parallel_size")
		c.EP = b.int(m + "expert_model_parallel_size")
		c.ETP = b.int(m + "expert_tensor_parallel_size")
	} else {
		c.TP, c.PP = ptr(int64(1)), ptr(int64(1))
		b.note("tp, pp: 1, the FSDP backend shards parameters instead")
		if c.CP = b.int(actor + "ulysses_sequence_parallel_size"); c.CP != nil {
			b.note("cp: Ulysses sequence-parallel size (FSDP)")
		} else {
			c.CP = ptr(int64(1))
			b.note("cp: 1, no ulysses_sequence_parallel_size")
		}
	}
	tn, tg := b.int("trainer.nnodes"), b.int("trainer.n_gpus_per_node")
	rn, rg := b.int("rollout.nnodes"), b.int("rollout.n_gpus_per_node")
	if tn != nil && tg != nil {
		c.GPUs, c.Nodes, c.GPUsPerNode = ptr(*tn**tg), tn, tg
		if rn != nil && rg != nil {
			c.GPUs = ptr(*c.GPUs + *rn**rg)
			c.Nodes = ptr(max(*tn, *rn))
			if *rn == *tn {
				c.GPUsPerNode = ptr(*tg + *rg)
			}
			b.note("gpus: trainer.nnodes × trainer.n_gpus_per_node + rollout.nnodes × rollout.n_gpus_per_node")
		}
	}
	switch {
	case strings.Contains(b.train, "fully_async"):
		c.Mode = ptr("fully-async")
	case !b.hasFalse("actor_rollout_ref.hybrid_engine"):
		c.Mode = ptr("colocate")
		b.note("mode: colocate, verl's hybrid engine shares GPUs between actor and rollout")
	}
	c.MicroBatch = b.int(actor + "ppo_micro_batch_size_per_gpu")
	if c.GlobalBatch = b.int("data.train_batch_size"); c.GlobalBatch != nil {
		b.note("global_batch: data.train_batch_size, in prompts")
	}
	c.MaxPromptLen = b.int("data.max_prompt_length")
	c.MaxResponseLen = b.int("data.max_response_length")
	c.MaxTokensPerGPU = b.int(actor + "ppo_max_token_len_per_gpu")
	c.RolloutTP = b.int("actor_rollout_ref.rollout.tensor_model_parallel_size")
	var rec []string
	if b.has("actor_rollout_ref.model.enable_gradient_checkpointing") {
		rec = append(rec, "gradient checkpointing")
	}
	if v, ok := b.get(actor + "megatron.override_transformer_config.recompute_granularity"); ok {
		rec = append(rec, v)
	}
	if len(rec) > 0 {
		c.Recompute = ptr(strings.Join(rec, ","))
	}
	var off []string
	for _, k := range b.keys() {
		if (strings.HasSuffix(k, "offload") || strings.HasSuffix(k, "offload_fraction")) && b.has(k) {
			off = append(off, strings.TrimPrefix(k, "actor_rollout_ref."))
		}
	}
	if len(off) > 0 {
		c.Offload = ptr(strings.Join(off, ","))
	}
}

func (b *ctxBuilder) hasFalse(key string) bool {
	v, ok := b.get(key)
	return ok && isFalse(v)
}
