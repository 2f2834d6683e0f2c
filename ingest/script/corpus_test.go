package script

import (
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
)

// corpusRoot is the corpus of real launch scripts: testdata/corpus/scripts.
func corpusRoot(t testing.TB) string {
	t.Helper()
	return corpus.Dir(t, "scripts")
}

// TestCorpusParses: every script and model config in the corpus parses
// without a fatal error, and every launch script yields flags.
func TestCorpusParses(t *testing.T) {
	root := corpusRoot(t)
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".sh") {
			return err
		}
		n++
		s, err := ParseFile(p, Options{})
		if err != nil {
			t.Errorf("%s: %v", p, err)
			return nil
		}
		if len(s.Flags) == 0 {
			t.Errorf("%s: no flags", p)
		}
		for _, pr := range s.Problems {
			// the entrypoint that sets MODEL_CONFIG_DIR is not in the
			// corpus; anything else is a parser problem
			if !strings.Contains(pr.Msg, "entrypoint/local") && !strings.Contains(pr.Msg, "never defined") {
				t.Errorf("%s: unexpected problem %v", p, pr)
			}
		}
		if !strings.Contains(p, "/models/") && len(s.Commands) == 0 {
			t.Errorf("%s: no launch command found", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 90 {
		t.Errorf("only %d scripts found", n)
	}
}

// ctxWant is a context as read off the script by hand. Zero values are not
// checked, except where a field is listed in nulls.
type ctxWant struct {
	path                       string
	framework, model, moe      string
	modality, mode             string
	gpus, nodes, gpn           int64
	tp, pp, cp, ep, etp, dp    int64
	vpp, maxResp, globalB      int64
	precision, gpu             string
	nulls                      string // comma-separated fields that must be nil
	experts, layers, rolloutTP int64
}

func TestCorpusContext(t *testing.T) {
	root := corpusRoot(t)
	cases := []ctxWant{
		// relax: --resource, --colocate / --fully-async / --hybrid, PERF_ARGS
		{path: "relax/scripts/training/text/run-qwen3-4B-8xgpu.sh", framework: "relax", model: "qwen3-4B", moe: "dense", modality: "text", mode: "colocate",
			gpus: 8, nodes: 1, gpn: 8, tp: 2, pp: 1, cp: 1, ep: 1, etp: 1, dp: 4, maxResp: 8192, globalB: 128, layers: 36, nulls: "MicroBatch,GPU,Experts"},
		{path: "relax/scripts/training/text/run-qwen3-30B-A3B-16xgpu-async.sh", framework: "relax", model: "qwen3-30B-A3B", moe: "moe", modality: "text", mode: "fully-async",
			gpus: 16, nodes: 2, gpn: 8, tp: 4, pp: 2, cp: 1, ep: 4, etp: 1, dp: 1, globalB: 256, experts: 128},
		{path: "relax/scripts/training/text/run-qwen35-35B-A3B-16xnpu-colocate.sh", framework: "relax", model: "qwen35-35B-A3B", moe: "moe", mode: "colocate",
			gpus: 16, nodes: 1, gpn: 16, tp: 4, pp: 2, cp: 1, ep: 8, gpu: "NPU", rolloutTP: 8},
		{path: "relax/scripts/training/text/run-glm5-744B-A40B-128xgpu.sh", framework: "relax", model: "glm5-744B-A40B", moe: "moe", modality: "text", mode: "colocate",
			gpus: 128, nodes: 16, gpn: 8, tp: 4, pp: 4, cp: 2, ep: 32, etp: 1, dp: 4, maxResp: 32768, globalB: 64},
		{path: "relax/scripts/training/text/run-qwen36-35B-A3B-8xgpu-vpp.sh", framework: "relax", mode: "colocate", gpus: 8, tp: 2, pp: 4, vpp: 2, cp: 1, ep: 1, dp: 1},
		{path: "relax/scripts/training/text/run-qwen36-35B-A3B-8xgpu.sh", framework: "relax", model: "qwen36-35B-A3B", moe: "moe", mode: "colocate",
			gpus: 8, tp: 2, pp: 1, cp: 2, ep: 8, etp: 1, dp: 2, maxResp: 8192, experts: 256, layers: 40, rolloutTP: 8},
		{path: "relax/scripts/training/text/run-qwen3-4B-4xgpu-async-npu.sh", framework: "relax", mode: "fully-async", gpus: 4, nodes: 1, gpn: 4, tp: 1, gpu: "NPU"},
		{path: "relax/scripts/training/text/run-qwen3-4B-8xgpu-hybrid-async.sh", framework: "relax", mode: "hybrid", gpus: 8, tp: 2},
		{path: "relax/scripts/training/text/run-qwen3-4B-fp16-8xgpu.sh", framework: "relax", precision: "fp16", gpus: 8},
		{path: "relax/scripts/training/text/run-qwen3-30B-A3B-int4-8xgpu.sh", framework: "relax", moe: "moe", precision: "bf16+int4", gpus: 8, ep: 8},
		{path: "relax/scripts/training/text/run-qwen35-9B-8xklx.sh", framework: "relax", model: "qwen35-9B", moe: "dense", gpu: "KLX", gpus: 8, tp: 4},
		{path: "relax/scripts/training/multimodal/run-qwen3-30B-A3B-omni-16xgpu-video.sh", framework: "relax", model: "qwen3-omni-30B-A3B", moe: "moe", modality: "video",
			mode: "colocate", gpus: 16, tp: 4, pp: 1, cp: 1, ep: 16, dp: 4},
		{path: "relax/scripts/training/multimodal/run-qwen3-30B-A3B-omni-16xgpu.sh", framework: "relax", modality: "omni", gpus: 16, tp: 4, pp: 2, ep: 8},
		{path: "relax/scripts/training/multimodal/run-qwen35-9B-8xgpu-openr1mm-hybrid-async.sh", framework: "relax", moe: "dense", modality: "image", mode: "hybrid",
			gpus: 8, tp: 2, pp: 1, cp: 2, ep: 1, maxResp: 10240},
		{path: "relax/scripts/training/multimodal/run-dotsocr2-8xgpu.sh", framework: "relax", model: "dotsocr2", moe: "dense", modality: "image", mode: "colocate",
			gpus: 8, tp: 1, pp: 1, cp: 2, ep: 1, dp: 4},
		{path: "relax/scripts/training/multimodal/run-kimi-k2.6-256xgpu-int4.sh", framework: "relax", model: "kimi-k2.6", moe: "moe", modality: "image", mode: "colocate",
			gpus: 256, nodes: 32, tp: 8, pp: 8, cp: 4, ep: 32, etp: 1, dp: 1, precision: "int4", experts: 384, layers: 61},
		// MODE is never set here: which launch runs is unknown, so the mode is
		{path: "relax/scripts/training/multimodal/run-qwen36-35B-A3B-fp8-8xgpu-image.sh", framework: "relax", modality: "image", gpus: 8, precision: "fp8", nulls: "Mode,DP"},
		{path: "relax/scripts/training/sft/run-qwen3.5-35B-A3B-mtp-sft-16xgpu.sh", framework: "relax", model: "qwen35-35B-A3B", moe: "moe", mode: "sft",
			gpus: 16, tp: 2, pp: 2, cp: 1, ep: 4, etp: 1, dp: 4, globalB: 128},
		{path: "relax/scripts/training/sft/run-qwen3-vl-4B-pokemon-1xgpu.sh", framework: "relax", modality: "image", gpus: 1, nodes: 1, gpn: 1},
		// slime: --actor-num-nodes × --actor-num-gpus-per-node (+ --rollout-num-gpus)
		{path: "slime/scripts/run-qwen3-30B-A3B.sh", framework: "slime", model: "qwen3-30B-A3B", moe: "moe", modality: "text", mode: "colocate",
			gpus: 8, nodes: 1, gpn: 8, tp: 4, pp: 1, cp: 1, ep: 8, etp: 1, dp: 2, maxResp: 8192, globalB: 256, rolloutTP: 8},
		{path: "slime/scripts/run-glm4-9B.sh", framework: "slime", model: "glm4-9B", moe: "dense", mode: "sync",
			gpus: 8, nodes: 1, gpn: 8, tp: 2, pp: 1, cp: 2, ep: 1, dp: 1},
		// NUM_GPUS comes from nvidia-smi: the GPU count is unknown
		{path: "slime/scripts/run-qwen3-4B.sh", framework: "slime", model: "qwen3-4B", moe: "dense", mode: "colocate", nodes: 1, tp: 2, nulls: "GPUs,DP"},
		// megatron: torchrun --nproc_per_node × --nnodes
		{path: "megatron/examples/gpt3/train_gpt3_175b_distributed.sh", framework: "megatron", model: "gpt3-175b", moe: "dense", modality: "text",
			gpus: 8, nodes: 1, gpn: 8, tp: 8, pp: 16, cp: 1, ep: 1, precision: "fp16", layers: 96, nulls: "DP,Mode,ETP"},
		{path: "megatron/examples/llama/train_llama3_8b_h100_fp8.sh", framework: "megatron", model: "llama3-8b", moe: "dense",
			gpus: 8, nodes: 1, gpn: 8, tp: 1, pp: 1, cp: 1, dp: 8, globalB: 128, precision: "fp8", gpu: "H100", layers: 32},
		// verl: Hydra overrides
		{path: "verl/examples/grpo_trainer/run_qwen3-8b.sh", framework: "verl", model: "Qwen3-8B", moe: "dense", mode: "colocate",
			gpus: 8, nodes: 1, gpn: 8, tp: 1, pp: 1, cp: 1, dp: 8, maxResp: 1024, globalB: 1024, rolloutTP: 2, nulls: "EP,Layers"},
		{path: "verl/examples/ppo_trainer/run_deepseek7b_llm_sp2.sh", framework: "verl", model: "deepseek-llm-7b-chat", moe: "dense",
			gpus: 8, cp: 2, dp: 4, rolloutTP: 4},
		{path: "verl/examples/grpo_trainer/run_qwen3moe-30b_megatron_96gb.sh", framework: "verl", model: "Qwen3-30B-A3B-Base", moe: "moe", mode: "colocate",
			gpus: 8, nodes: 1, tp: 1, pp: 1, cp: 1, ep: 8, etp: 1, dp: 8, maxResp: 8192, globalB: 512, rolloutTP: 4, nulls: "VPP"},
		{path: "verl/verl/experimental/fully_async_policy/shell/dapo_7b_math_fsdp2_4_12.sh", framework: "verl", model: "Qwen2.5-Math-7B", moe: "dense", mode: "fully-async",
			gpus: 16, nodes: 2, gpn: 8, dp: 12, maxResp: 8192},
	}
	for _, w := range cases {
		t.Run(filepath.Base(w.path), func(t *testing.T) {
			s, err := ParseFile(filepath.Join(root, w.path), Options{})
			if err != nil {
				t.Fatal(err)
			}
			c := s.Context
			str := func(name string, got *string, want string) {
				if want != "" && (got == nil || *got != want) {
					t.Errorf("%s = %v, want %q", name, deref(got), want)
				}
			}
			num := func(name string, got *int64, want int64) {
				if want != 0 && (got == nil || *got != want) {
					t.Errorf("%s = %v, want %d", name, deref(got), want)
				}
			}
			if c.Framework != w.framework {
				t.Errorf("framework = %q, want %q", c.Framework, w.framework)
			}
			str("model", c.Model, w.model)
			str("dense_or_moe", c.DenseOrMoE, w.moe)
			str("modality", c.Modality, w.modality)
			str("mode", c.Mode, w.mode)
			str("precision", c.Precision, w.precision)
			str("gpu", c.GPU, w.gpu)
			num("gpus", c.GPUs, w.gpus)
			num("nodes", c.Nodes, w.nodes)
			num("gpus_per_node", c.GPUsPerNode, w.gpn)
			num("tp", c.TP, w.tp)
			num("pp", c.PP, w.pp)
			num("vpp", c.VPP, w.vpp)
			num("cp", c.CP, w.cp)
			num("ep", c.EP, w.ep)
			num("etp", c.ETP, w.etp)
			num("dp", c.DP, w.dp)
			num("max_response_len", c.MaxResponseLen, w.maxResp)
			num("global_batch", c.GlobalBatch, w.globalB)
			num("experts", c.Experts, w.experts)
			num("layers", c.Layers, w.layers)
			num("rollout_tp", c.RolloutTP, w.rolloutTP)
			for _, f := range strings.Split(w.nulls, ",") {
				if f != "" && !isNil(c, f) {
					t.Errorf("%s should be null", f)
				}
			}
			if t.Failed() {
				t.Logf("derived: %q\nproblems: %q", c.Derived, c.Problems)
			}
		})
	}
}

func deref[T any](p *T) any {
	if p == nil {
		return nil
	}
	return *p
}

func isNil(c Context, field string) bool {
	switch field {
	case "Mode":
		return c.Mode == nil
	case "DP":
		return c.DP == nil
	case "GPUs":
		return c.GPUs == nil
	case "GPU":
		return c.GPU == nil
	case "MicroBatch":
		return c.MicroBatch == nil
	case "Experts":
		return c.Experts == nil
	case "EP":
		return c.EP == nil
	case "ETP":
		return c.ETP == nil
	case "VPP":
		return c.VPP == nil
	case "Layers":
		return c.Layers == nil
	}
	panic("isNil: unknown field " + field)
}

// TestCorpusDetails pins a few flag rows of real scripts: the NOTE in a
// Relax optimizer block, a commented-out flag, a flag from a sourced model
// config, and a Megatron flag behind an if on DTYPE.
func TestCorpusDetails(t *testing.T) {
	root := corpusRoot(t)
	s, err := ParseFile(filepath.Join(root, "relax/scripts/training/text/run-qwen36-35B-A3B-8xgpu.sh"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := only(t, s, "--no-rope-fusion")
	if f.Comment != "NOTE(wuhuan): to avoid algorithm performance degradation" || f.Array != "OPTIMIZER_ARGS" || f.Line != 114 ||
		f.Command != "python3 -m relax.entrypoints.train" || f.Taken != TakenYes {
		t.Errorf("--no-rope-fusion = %+v", f)
	}
	if f := only(t, s, "--sglang-cuda-graph-bs"); f.Branch != "commented out" || f.Taken != TakenNo || f.Line != 122 {
		t.Errorf("commented-out flag = %+v", f)
	}
	if f := only(t, s, "--num-experts"); filepath.Base(f.File) != "qwen36-35B-A3B.sh" || f.Line != 48 || f.Value != "256" || f.Array != "MODEL_ARGS" {
		t.Errorf("model config flag = %+v", f)
	}
	if f := only(t, s, "--resource"); f.Value != `{"actor": [1, 8], "rollout": [1, 8]}` || f.Line != 155 {
		t.Errorf("--resource = %+v", f)
	}
	if f := only(t, s, "--address"); f.Command != "ray job submit" || f.Value != "http://${HOST_IP}:8265" {
		t.Errorf("--address = %+v", f)
	}
	wantProblem(t, s, filepath.Join(root, "relax/scripts/training/text/run-qwen36-35B-A3B-8xgpu.sh")+
		":19: source \"${SCRIPT_DIR}/../../entrypoint/local.sh\": "+filepath.Join(mustAbs(t, root), "relax/scripts/entrypoint/local.sh")+": no such file")

	s, err = ParseFile(filepath.Join(root, "megatron/examples/llama/train_llama3_8b_h100_fp8.sh"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	f = only(t, s, "--fp8-format")
	if f.Value != "hybrid" || f.Branch != `if [[ "$DTYPE" == "fp8" ]]` || f.Taken != TakenYes || f.Array != "DTYPE_ARGS" || f.Line != 108 {
		t.Errorf("--fp8-format = %+v", f)
	}
	if fs := all(s, "--tokenizer-type"); len(fs) != 2 || fs[0].Value != "NullTokenizer" || fs[0].Taken != TakenYes || fs[1].Taken != TakenNo {
		t.Errorf("--tokenizer-type = %+v", fs)
	}

	// the Args option picks the launch a MODE argument selects
	path := filepath.Join(root, "relax/scripts/training/multimodal/run-qwen36-35B-A3B-8xgpu-image.sh")
	s, _ = ParseFile(path, Options{Args: []string{"async"}})
	if m := s.Context.Mode; m == nil || *m != "fully-async" || s.Context.GPUs == nil || *s.Context.GPUs != 8 {
		t.Errorf("async: mode %v gpus %v", deref(m), deref(s.Context.GPUs))
	}
	for _, f := range all(s, "--colocate") {
		if f.Taken != TakenNo {
			t.Errorf("--colocate under MODE=async: %+v", f)
		}
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
