package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// auditScriptText is a small Relax launch script: MoE with EP 1 (R-P05)
// and no --sglang-load-format dummy (R-P01).
const auditScriptText = `#!/bin/bash
PERF_ARGS=(
   --tensor-model-parallel-size 2
   --expert-model-parallel-size 1
   --use-dynamic-batch-size
   --max-tokens-per-gpu 20480
)
ROLLOUT_ARGS=(
   --prompt-data /data/train.jsonl
   --rollout-max-response-len 8192
   --global-batch-size 256
)
SGLANG_ARGS=(
   --rollout-num-gpus-per-engine 2
)
ray job submit -- python3 train.py --colocate "${PERF_ARGS[@]}" "${ROLLOUT_ARGS[@]}" "${SGLANG_ARGS[@]}"
`

func writeAuditScript(t *testing.T, name, text string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAuditCLI(t *testing.T) {
	p := writeAuditScript(t, "run-qwen3-30B-A3B-8xgpu.sh", auditScriptText)
	before, _ := os.ReadFile(p)
	code, out, errOut := trainscope(t, "audit", p)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"# perf-doctor: " + p, "**Context:** model=qwen3-30B-A3B (MoE, text)", "GPU=H20 96GB (assumed)",
		"## 🚀 Performance findings", "R-P05 — MoE without expert parallelism", "## 💾 Memory findings", "- Critical: ", "**Top action:** "} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if after, _ := os.ReadFile(p); string(after) != string(before) {
		t.Fatal("the script was modified")
	}

	// --gpu for a script that names none; JSON output to a file.
	outFile := filepath.Join(t.TempDir(), "audit.json")
	code, _, errOut = trainscope(t, "audit", p, "--gpu", "H100-80G", "--format", "json", "--out", outFile)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var rep struct {
		Scripts []struct {
			Context     string `json:"context"`
			GPUSource   string `json:"gpu_source"`
			Performance []struct {
				Rule string `json:"rule"`
				File string `json:"file"`
				Line int    `json:"line"`
				Flag string `json:"flag"`
			} `json:"performance"`
		} `json:"scripts"`
	}
	b, _ := os.ReadFile(outFile)
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("%v: %s", err, b)
	}
	if len(rep.Scripts) != 1 || rep.Scripts[0].GPUSource != "flag" || !strings.Contains(rep.Scripts[0].Context, "GPU=H100-SXM 80GB (--gpu)") {
		t.Fatalf("GPU not taken from --gpu: %+v", rep.Scripts)
	}
	found := false
	for _, f := range rep.Scripts[0].Performance {
		if f.Rule == "R-P05" && f.Flag == "--expert-model-parallel-size" && f.Line == 4 && f.File == p {
			found = true
		}
	}
	if !found {
		t.Fatalf("R-P05 with its file:line missing: %+v", rep.Scripts[0].Performance)
	}

	// HTML: the same report as a page
	code, page, errOut := trainscope(t, "audit", p, "--format", "html")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{"<!DOCTYPE html>", "<strong>Context:</strong> model=qwen3-30B-A3B (MoE, text)", "R-P05 — MoE without expert parallelism</h3>"} {
		if !strings.Contains(page, want) {
			t.Errorf("HTML report lacks %q", want)
		}
	}
}

func TestAuditCLIErrors(t *testing.T) {
	if code, _, _ := trainscope(t, "audit"); code != 2 {
		t.Errorf("no script: exit %d, want 2", code)
	}
	p := writeAuditScript(t, "run-qwen3-4B-8xgpu.sh", auditScriptText)
	if code, _, _ := trainscope(t, "audit", p, "--gpu", "no-such-gpu"); code != 2 {
		t.Errorf("unknown GPU: exit %d, want 2", code)
	}
	if code, _, _ := trainscope(t, "audit", p, "--format", "xml"); code != 2 {
		t.Errorf("bad format: exit %d, want 2", code)
	}
	// Nothing parseable (a missing file, a binary file, a file that is
	// not a launch script): exit 2 with each file's problem, and no report
	// (no findings, no "Top action" under a failure)
	bin := writeAuditScript(t, "run-x.sh", "\x7fELF\x00\x00\x00\x01\x02")
	notLaunch := writeAuditScript(t, "setup.sh", "echo hello\nls -la\n")
	code, out, errOut := trainscope(t, "audit", filepath.Join(t.TempDir(), "missing.sh"), bin, notLaunch)
	if code != 2 || out != "" || !strings.Contains(errOut, "missing.sh") || !strings.Contains(errOut, "run-x.sh") ||
		!strings.Contains(errOut, "setup.sh: not a launch script") {
		t.Errorf("unparseable scripts: exit %d, want 2, no report and each file's problem:\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	// A malformed script still yields a report of what was read, exit 0.
	bad := writeAuditScript(t, "run-qwen3-30B-A3B-8xgpu.sh", auditScriptText+"\nX=\"unterminated\n")
	code, out, errOut = trainscope(t, "audit", bad, bin)
	if code != 0 || !strings.Contains(out, "R-P05") || !strings.Contains(out, "**Parse problems**") {
		t.Errorf("malformed script: exit %d (%s), want 0 with findings and problems:\n%s", code, errOut, out)
	}
}
