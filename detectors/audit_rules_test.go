package detectors_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/trainscope/trainscope/bench/corpus"
	"github.com/trainscope/trainscope/detectors"
	"github.com/trainscope/trainscope/ingest/script"
	"github.com/trainscope/trainscope/sql/duck"
)

// auditScript is one script to audit: inline source, or a corpus path.
type auditScript struct {
	name string // file name the parser sees (it reads model, GPUs, mode from it)
	src  string // inline source; empty: read name from disk
}

// runAudit parses the scripts, runs the audit rules and returns the report
// and, per script in order, rule id -> severity.
func runAudit(t *testing.T, cfg detectors.Config, opt detectors.AuditOptions, scripts ...auditScript) (*detectors.AuditReport, []map[string]string) {
	t.Helper()
	ctx := context.Background()
	st, err := duck.Open(ctx, "", duck.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	for i, s := range scripts {
		var sc *script.Script
		if s.src != "" {
			sc, err = script.Parse(s.name, []byte(s.src), script.Options{})
		} else {
			sc, err = script.ParseFile(s.name, script.Options{SearchRoot: corpusScriptsRoot(t)})
		}
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		flags, c := sc.Records(fmt.Sprintf("run-%03d", i))
		if err := st.Insert(ctx, "script_flags", flags); err != nil {
			t.Fatal(err)
		}
		if err := st.Insert(ctx, "script_context", c); err != nil {
			t.Fatal(err)
		}
		flags.Release()
		c.Release()
	}
	set, err := detectors.NewAuditSet(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := set.RunAudit(ctx, st, opt); err != nil {
		t.Fatal(err)
	}
	rep, err := detectors.BuildAuditReport(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, s := range rep.Scripts {
		m := map[string]string{}
		for _, f := range append(append([]detectors.AuditFinding{}, s.Performance...), s.Memory...) {
			m[f.Rule] = f.Severity
		}
		out = append(out, m)
	}
	return rep, out
}

// baseScript is a Relax launch script that no perf-doctor rule should
// flag: MoE 30B-A3B on 8 GPUs, colocate, TP2/EP8, dynamic batch sized as
// the rules suggest, DeepEP, flash attention, dummy load, streaming data,
// CUDA graphs, balanced data. Cases edit one thing at a time.
const baseScript = `#!/bin/bash
set -ex
PERF_ARGS=(
   --tensor-model-parallel-size 2
   --sequence-parallel
   --pipeline-model-parallel-size 1
   --context-parallel-size 1
   --expert-model-parallel-size 8
   --expert-tensor-parallel-size 1
   --use-dynamic-batch-size
   --max-tokens-per-gpu 20480
   --moe-token-dispatcher-type flex
   --moe-flex-dispatcher-backend deepep
)
MODEL_ARGS=(
   --num-layers 48
   --hidden-size 2048
   --num-attention-heads 32
   --num-query-groups 4
   --num-experts 128
   --moe-router-topk 8
   --vocab-size 151936
)
ROLLOUT_ARGS=(
   --prompt-data /data/train.jsonl
   --rollout-max-response-len 8192
   --global-batch-size 256
   --use-streaming-dataset
   --balance-data
)
SGLANG_ARGS=(
   --rollout-num-gpus-per-engine 2
   --sglang-mem-fraction-static 0.75
   --sglang-load-format dummy
   --sglang-cuda-graph-bs 1 2 4 8
)
MISC_ARGS=(
   --attention-backend flash
)
ray job submit --address="http://127.0.0.1:8265" -- python3 relax/entrypoints/train.py \
   --colocate \
   "${PERF_ARGS[@]}" "${MODEL_ARGS[@]}" "${ROLLOUT_ARGS[@]}" "${SGLANG_ARGS[@]}" "${MISC_ARGS[@]}"
`

// edit applies old->new replacements to baseScript; each old must occur.
func edit(t *testing.T, pairs ...string) string {
	t.Helper()
	s := baseScript
	for i := 0; i+1 < len(pairs); i += 2 {
		if !strings.Contains(s, pairs[i]) {
			t.Fatalf("edit: %q not in the base script", pairs[i])
		}
		s = strings.Replace(s, pairs[i], pairs[i+1], 1)
	}
	return s
}

var allRules = []string{"R-M01", "R-M02", "R-M03", "R-M04", "R-P01", "R-P02", "R-P03", "R-P04", "R-P05", "R-P06",
	"R-P07", "R-P08", "R-P09", "R-P10", "R-P11", "R-P12", "R-P13", "G-PAR", "G-EP", "G-TP", "G-PP", "G-BATCH", "G-CP"}

const moe8 = "run-qwen3-30B-A3B-8xgpu.sh"

// dense turns the base into a dense model (no experts, no EP, no
// dispatcher).
var dense = []string{"   --num-experts 128\n", "", "   --moe-router-topk 8\n", "", "   --expert-model-parallel-size 8\n", "",
	"   --moe-token-dispatcher-type flex\n", "", "   --moe-flex-dispatcher-backend deepep\n", ""}

// TestAuditRulesInline runs every rule on small scripts with known
// answers: CI has no corpus, and each rule fires at least once here and is
// shown quiet where its Skip-when (or a NOTE, a branch not taken) applies.
func TestAuditRulesInline(t *testing.T) {
	offload := "   --attention-backend flash\n   --optimizer-cpu-offload\n   --overlap-cpu-optimizer-d2h-h2d\n   --use-precision-aware-optimizer\n"
	recompute := "   --use-dynamic-batch-size\n   --recompute-granularity full\n   --recompute-method uniform\n   --recompute-num-layers 1\n"
	cases := []struct {
		name   string
		file   string
		src    func(t *testing.T) string
		want   map[string]string // rule -> severity ("" any)
		quiet  []string          // rules that must not fire
		allOff bool              // every rule not in want must be quiet
	}{
		{"good", moe8, func(t *testing.T) string { return baseScript }, map[string]string{"MEM": ""}, nil, true},
		{"ep1", moe8, func(t *testing.T) string {
			return edit(t, "--expert-model-parallel-size 8", "--expert-model-parallel-size 1")
		}, map[string]string{"R-P05": "critical"}, nil, false},
		{"ep1_note", moe8, func(t *testing.T) string {
			return edit(t, "   --expert-model-parallel-size 8", "   # NOTE(dev): EP off to compare against the replicated baseline\n   --expert-model-parallel-size 1")
		}, map[string]string{"R-P05": "info"}, nil, false},
		{"missing_flags", moe8, func(t *testing.T) string {
			return edit(t, "   --sglang-load-format dummy\n", "", "   --use-streaming-dataset\n", "", "   --sglang-cuda-graph-bs 1 2 4 8\n", "",
				"   --attention-backend flash\n", "   --attention-dropout 0.0\n", "   --moe-token-dispatcher-type flex\n", "",
				"   --use-dynamic-batch-size\n", "")
		}, map[string]string{"R-P01": "info", "R-P02": "info", "R-P12": "info", "R-P09": "warn", "R-P08": "info", "R-P11": "warn"}, []string{"R-M03"}, false},
		{"cuda_graph_commented", moe8, func(t *testing.T) string {
			return edit(t, "   --sglang-cuda-graph-bs 1 2 4 8\n", "   # --sglang-cuda-graph-bs 1 2 4 8\n")
		}, map[string]string{"R-P12": "info"}, nil, false},
		{"dynamic_batch_branch_not_taken", moe8, func(t *testing.T) string {
			return edit(t, "   --use-dynamic-batch-size\n", "", "ray job submit", "if [ \"a\" = \"b\" ]; then\n  PERF_ARGS+=(--use-dynamic-batch-size)\nfi\nray job submit")
		}, map[string]string{"R-P11": "warn"}, nil, false},
		{"rope_branch_not_taken", moe8, func(t *testing.T) string {
			return edit(t, "ray job submit", "if [ \"a\" = \"b\" ]; then\n  PERF_ARGS+=(--no-rope-fusion)\nfi\nray job submit")
		}, nil, []string{"R-P10"}, false},
		{"rope_text", moe8, func(t *testing.T) string {
			return edit(t, "   --attention-backend flash\n", "   --attention-backend flash\n   --no-rope-fusion\n")
		}, map[string]string{"R-P10": "info"}, nil, false},
		{"rope_text_note", moe8, func(t *testing.T) string {
			return edit(t, "   --attention-backend flash\n", "   --attention-backend flash\n\n   # NOTE(dev): to avoid algorithm performance degradation\n   --no-rope-fusion\n")
		}, nil, []string{"R-P10"}, false},
		{"rope_multimodal", "run-qwen3-vl-30B-A3B-8xgpu-image.sh", func(t *testing.T) string {
			return edit(t, "   --attention-backend flash\n", "   --attention-backend flash\n   --no-rope-fusion\n")
		}, nil, []string{"R-P10"}, false},
		{"mem_fraction", moe8, func(t *testing.T) string {
			return edit(t, "--sglang-mem-fraction-static 0.75", "--sglang-mem-fraction-static 0.5")
		}, map[string]string{"R-M04": "info"}, nil, false},
		{"cp_short", moe8, func(t *testing.T) string {
			return edit(t, "--context-parallel-size 1", "--context-parallel-size 2", "--max-tokens-per-gpu 20480", "--max-tokens-per-gpu 10240")
		}, map[string]string{"R-P04": "warn"}, []string{"G-CP"}, false},
		{"cp_long_missing", moe8, func(t *testing.T) string {
			return edit(t, "--rollout-max-response-len 8192", "--rollout-max-response-len 32768", "--max-tokens-per-gpu 20480", "--max-tokens-per-gpu 65536")
		}, map[string]string{"R-P04": "warn"}, nil, false},
		{"cp_too_many", moe8, func(t *testing.T) string {
			return edit(t, "--context-parallel-size 1", "--context-parallel-size 4", "--rollout-max-response-len 8192", "--rollout-max-response-len 4096")
		}, map[string]string{"R-P04": "warn", "G-CP": "warn"}, nil, false},
		{"tp_across_nodes", "run-qwen3-30B-A3B-32xgpu.sh", func(t *testing.T) string {
			return edit(t, "--tensor-model-parallel-size 2", "--tensor-model-parallel-size 16")
		}, map[string]string{"R-P06": "critical"}, []string{"G-PAR"}, false},
		{"pp_not_needed", moe8, func(t *testing.T) string {
			return edit(t, "--pipeline-model-parallel-size 1", "--pipeline-model-parallel-size 2", "--expert-model-parallel-size 8", "--expert-model-parallel-size 4")
		}, map[string]string{"R-P07": "info"}, []string{"G-PP", "G-EP"}, false},
		{"max_tokens_low", moe8, func(t *testing.T) string {
			return edit(t, "--max-tokens-per-gpu 20480", "--max-tokens-per-gpu 4096")
		}, map[string]string{"R-M03": "warn"}, nil, false},
		{"fully_async", moe8, func(t *testing.T) string {
			return edit(t, "   --colocate \\\n", "   --fully-async --max-staleness 0 --num-iters-per-train-update 4 \\\n")
		}, map[string]string{"R-P13": "critical", "R-P03": "warn"}, []string{"R-P12"}, false},
		{"hybrid_balance_ok", moe8, func(t *testing.T) string {
			return edit(t, "   --colocate \\\n", "   --fully-async --hybrid \\\n")
		}, nil, []string{"R-P13"}, false},
		{"no_balance", moe8, func(t *testing.T) string {
			return edit(t, "   --balance-data\n", "")
		}, map[string]string{"R-P13": "warn"}, nil, false},
		{"offload_waste", "run-qwen3-4B-8xgpu.sh", func(t *testing.T) string {
			return edit(t, append(dense, "   --attention-backend flash\n", offload)...)
		}, map[string]string{"R-M01": "warn", "MEM": "info"}, nil, false},
		{"offload_needed", "run-qwen3-32B-2xgpu.sh", func(t *testing.T) string {
			return edit(t, append(dense, "   --attention-backend flash\n", offload, "--global-batch-size 256", "--global-batch-size 64")...)
		}, nil, []string{"R-M01"}, false},
		{"does_not_fit", "run-qwen3-32B-2xgpu.sh", func(t *testing.T) string {
			return edit(t, dense...)
		}, map[string]string{"MEM": "critical"}, nil, false},
		{"full_recompute_waste", "run-qwen3-4B-8xgpu.sh", func(t *testing.T) string {
			return edit(t, append(dense, "   --use-dynamic-batch-size\n", recompute, "--max-tokens-per-gpu 20480", "--max-tokens-per-gpu 10240")...)
		}, map[string]string{"R-M02": ""}, nil, false},
		{"full_recompute_long_context", "run-qwen3-4B-8xgpu.sh", func(t *testing.T) string {
			return edit(t, append(dense, "   --use-dynamic-batch-size\n", recompute, "--rollout-max-response-len 8192", "--rollout-max-response-len 32768")...)
		}, nil, []string{"R-M02"}, false},
		{"tp3", moe8, func(t *testing.T) string {
			return edit(t, "--tensor-model-parallel-size 2", "--tensor-model-parallel-size 3")
		}, map[string]string{"G-PAR": "critical", "G-TP": ""}, nil, false},
		{"ep3", moe8, func(t *testing.T) string {
			return edit(t, "--expert-model-parallel-size 8", "--expert-model-parallel-size 3")
		}, map[string]string{"G-EP": "critical"}, nil, false},
		{"pp5", "run-qwen3-30B-A3B-40xgpu.sh", func(t *testing.T) string {
			return edit(t, "--pipeline-model-parallel-size 1", "--pipeline-model-parallel-size 5")
		}, map[string]string{"G-PP": "critical"}, []string{"G-PAR"}, false},
		{"pp5_uneven_split_given", "run-qwen3-30B-A3B-40xgpu.sh", func(t *testing.T) string {
			return edit(t, "--pipeline-model-parallel-size 1", "--pipeline-model-parallel-size 5\n   --decoder-last-pipeline-num-layers 8")
		}, nil, []string{"G-PP"}, false},
		{"batch", moe8, func(t *testing.T) string {
			return edit(t, "--global-batch-size 256", "--global-batch-size 250")
		}, map[string]string{"G-BATCH": "critical"}, nil, false},
	}
	fired := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, got := runAudit(t, detectors.Config{}, detectors.AuditOptions{}, auditScript{name: c.file, src: c.src(t)})
			g := got[0]
			for r, sev := range c.want {
				if _, ok := g[r]; !ok {
					t.Errorf("%s did not fire; fired: %v", r, keys(g))
				} else if sev != "" && g[r] != sev {
					t.Errorf("%s severity %s, want %s", r, g[r], sev)
				}
			}
			for _, r := range c.quiet {
				if _, ok := g[r]; ok {
					t.Errorf("%s fired (%s) but must not", r, g[r])
				}
			}
			if c.allOff {
				for _, r := range allRules {
					if _, ok := c.want[r]; !ok {
						if _, ok := g[r]; ok {
							t.Errorf("%s fired on the good script", r)
						}
					}
				}
			}
			for r := range g {
				fired[r] = true
			}
		})
	}
	for _, r := range allRules {
		if !fired[r] {
			t.Errorf("no inline case fires %s", r)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// corpusScriptsRoot is the Relax scripts folder of the corpus, relative
// to the working folder: the parser names a file it finds through
// SearchRoot as the root does and one it resolves through realpath by its
// absolute path, and the golden files keep the two apart.
func corpusScriptsRoot(t *testing.T) string {
	t.Helper()
	dir := corpus.Dir(t, "scripts/relax/scripts")
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, dir)
	if err != nil {
		t.Fatal(err)
	}
	return rel
}

// corpusScript is the corpus script training/rel, under corpusScriptsRoot.
func corpusScript(t *testing.T, rel string) string {
	t.Helper()
	p := filepath.Join(corpusScriptsRoot(t), "training", rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestAuditThresholdOverride: a threshold in config changes a verdict.
func TestAuditThresholdOverride(t *testing.T) {
	src := edit(t, "--sglang-mem-fraction-static 0.75", "--sglang-mem-fraction-static 0.9")
	_, got := runAudit(t, detectors.Config{}, detectors.AuditOptions{}, auditScript{name: moe8, src: src})
	if _, ok := got[0]["R-M04"]; ok {
		t.Fatal("R-M04 fired at 0.9 with the default max 0.92")
	}
	cfg := detectors.Config{Thresholds: map[string]map[string]float64{"r_m04": {"max_fraction": 0.85}}}
	_, got = runAudit(t, cfg, detectors.AuditOptions{}, auditScript{name: moe8, src: src})
	if _, ok := got[0]["R-M04"]; !ok {
		t.Fatal("R-M04 did not fire at 0.9 with max_fraction 0.85")
	}
	if _, err := detectors.NewAuditSet(detectors.Config{Thresholds: map[string]map[string]float64{"r_m04": {"nope": 1}}}); err == nil {
		t.Fatal("unknown threshold accepted")
	}
	if _, err := detectors.NewAuditSet(detectors.Config{Thresholds: map[string]map[string]float64{"slow_rank": {"min_z": 2}}}); err != nil {
		t.Fatalf("a trace detector's threshold must be left to NewSet: %v", err)
	}
}

// corpusCases are upstream Relax scripts with the rule ids that must and
// must not fire, written from rules.md and the script text (the reason is
// in the comment), not from the audit's output.
var corpusCases = []struct {
	rel   string
	fire  []string
	quiet []string
}{
	// MoE with EP 1, PP4 for a 35B model, CUDA graph line commented out;
	// --no-rope-fusion carries a NOTE; --balance-data and flash are set.
	{"text/run-qwen36-35B-A3B-8xgpu-vpp.sh", []string{"R-P05", "R-P07", "R-P12"}, []string{"R-P10", "R-P13", "R-P09", "G-PP"}},
	// the rule's own example: actor 8 / rollout 8 with 32 iterations per update
	{"text/run-qwen35-35B-A3B-16xgpu-async.sh", []string{"R-P03"}, []string{"R-P12", "R-P05"}},
	// multimodal: --no-rope-fusion is required; no streaming dataset is a warn
	{"multimodal/run-qwen3-vl-4B-8xgpu.sh", []string{"R-P02"}, []string{"R-P10", "R-P05", "R-P08"}},
	// pure fully-async with --balance-data: Relax refuses to start
	{"text/run-qwen3-4B-8xgpu-async.sh", []string{"R-P13"}, []string{"R-P12", "R-P05", "R-P08"}},
	// video with streaming: neither R-P02 nor R-P10
	{"multimodal/run-qwen35-9B-8xgpu-video.sh", nil, []string{"R-P02", "R-P10"}},
	// text, --no-rope-fusion with no comment
	{"text/run-qwen35-9B-8xgpu-async.sh", []string{"R-P10"}, []string{"R-P12"}},
	// CP2 with 8K responses; DeepEP and CUDA graphs set
	{"text/run-qwen3-30B-A3B-8xgpu.sh", []string{"R-P04"}, []string{"R-P08", "R-P12", "R-P05"}},
	// --max-tokens-per-gpu 4096 below the 8192-token responses
	{"text/run-qwen35-35B-A3B-mtp-8xgpu.sh", []string{"R-M03"}, []string{"R-P05"}},
	// NPU: DeepEP and flash attention do not apply
	{"text/run-qwen35-35B-A3B-16xnpu-colocate.sh", nil, []string{"R-P08", "R-P09"}},
	// MLA model (no flash rule); TP8 × CP4 spans nodes
	{"text/run-kimi-k2.6-256xgpu-int4.sh", []string{"R-P06"}, []string{"R-P09", "R-P05", "G-PP"}},
	// 78 layers over PP4 with --decoder-last-pipeline-num-layers: an uneven split on purpose
	{"text/run-glm5-744B-A40B-128xgpu.sh", nil, []string{"G-PP", "R-P05", "R-P09"}},
	// PP3 with --decoder-first/last-pipeline-num-layers 20; image data
	{"multimodal/run-qwen35-27B-8xgpu-openr1mm-hybrid-async.sh", nil, []string{"G-PP", "R-P10", "R-P05"}},
	// SFT: no rollout engine, so no SGLang or rollout-data rules
	{"sft/run-qwen3.5-9B-math-8xgpu.sh", nil, []string{"R-P01", "R-P02", "R-P12", "R-P13", "R-P03"}},
	// dense 4B colocate: no MoE rules
	{"text/run-qwen3-4B-8xgpu.sh", nil, []string{"R-P05", "R-P08", "R-P13"}},
	// MoE with EP8, DeepEP, CP2; OPTIMIZER_ARGS NOTE on --no-rope-fusion
	{"text/run-qwen36-35B-A3B-8xgpu.sh", nil, []string{"R-P05", "R-P08", "R-P10"}},
	// image, mode chosen by a MODE branch; --sglang-load-format dummy set
	{"multimodal/run-qwen36-35B-A3B-8xgpu-image.sh", nil, []string{"R-P01", "R-P10"}},
}

// TestAuditCorpusRules checks the table above and renders each script's
// report against testdata/audit/<case>/want.md (-update rewrites them).
func TestAuditCorpusRules(t *testing.T) {
	for _, c := range corpusCases {
		name := strings.TrimSuffix(filepath.Base(c.rel), ".sh")
		t.Run(name, func(t *testing.T) {
			p := corpusScript(t, c.rel)
			rep, got := runAudit(t, detectors.Config{}, detectors.AuditOptions{}, auditScript{name: p})
			for _, r := range c.fire {
				if _, ok := got[0][r]; !ok {
					t.Errorf("%s did not fire; fired: %v", r, keys(got[0]))
				}
			}
			for _, r := range c.quiet {
				if sev, ok := got[0][r]; ok {
					t.Errorf("%s fired (%s) but must not", r, sev)
				}
			}
			// Paths in the golden file are relative to the corpus
			// scripts folder, so the file does not depend on the checkout.
			for i := range rep.Scripts {
				rep.Scripts[i].Script = c.rel
			}
			var md strings.Builder
			if err := rep.WriteMarkdown(&md); err != nil {
				t.Fatal(err)
			}
			root := corpusScriptsRoot(t)
			out := strings.ReplaceAll(md.String(), filepath.Join(root, "training")+"/", "")
			out = strings.ReplaceAll(out, root+"/", "")
			if abs, err := filepath.Abs(root); err == nil {
				out = strings.ReplaceAll(out, abs+"/", "<scripts>/")
			}
			golden(t, filepath.Join("testdata", "audit", name, "want.md"), []byte(out))
		})
	}
}
