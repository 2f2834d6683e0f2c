package script

import (
	"errors"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// memFS serves sourced files from a map instead of the disk.
func memFS(files map[string]string) func(string) ([]byte, error) {
	return func(p string) ([]byte, error) {
		if s, ok := files[filepath.Clean(p)]; ok {
			return []byte(s), nil
		}
		return nil, fs.ErrNotExist
	}
}

func parseT(t *testing.T, src string, opt Options) *Script {
	t.Helper()
	if opt.readFile == nil {
		opt.readFile = memFS(nil)
	}
	s, err := Parse("/job/run.sh", []byte(src), opt)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return s
}

// only returns the single occurrence of a flag, failing otherwise.
func only(t *testing.T, s *Script, flag string) Flag {
	t.Helper()
	var got []Flag
	for _, f := range s.Flags {
		if f.Flag == flag {
			got = append(got, f)
		}
	}
	if len(got) != 1 {
		t.Fatalf("%s: %d occurrences, want 1: %+v", flag, len(got), got)
	}
	return got[0]
}

func all(s *Script, flag string) []Flag {
	var got []Flag
	for _, f := range s.Flags {
		if f.Flag == flag {
			got = append(got, f)
		}
	}
	return got
}

func wantFlag(t *testing.T, f Flag, value string, line int, command, array string) {
	t.Helper()
	if f.Value != value || f.Line != line || f.Command != command || f.Array != array {
		t.Errorf("%s = %q line %d command %q array %q; want %q line %d command %q array %q",
			f.Flag, f.Value, f.Line, f.Command, f.Array, value, line, command, array)
	}
}

func TestArraysAcrossLinesWithComments(t *testing.T) {
	s := parseT(t, `PERF_ARGS=(
   --tensor-model-parallel-size 2   # two-way TP
   # recompute everything
   --recompute-granularity full
   --sequence-parallel

   --eval-prompt-data aime /data/aime.jsonl
)
PERF_ARGS+=(--context-parallel-size 4)
EXTRA=( --lr 1e-6 )
python3 train.py "${PERF_ARGS[@]}" --seed 1
`, Options{})
	wantFlag(t, only(t, s, "--tensor-model-parallel-size"), "2", 2, "python3 train.py", "PERF_ARGS")
	if c := only(t, s, "--tensor-model-parallel-size").Comment; c != "two-way TP" {
		t.Errorf("trailing comment = %q", c)
	}
	rec := only(t, s, "--recompute-granularity")
	wantFlag(t, rec, "full", 4, "python3 train.py", "PERF_ARGS")
	if rec.Comment != "recompute everything" || rec.Raw != "--recompute-granularity full" {
		t.Errorf("comment %q raw %q", rec.Comment, rec.Raw)
	}
	if sp := only(t, s, "--sequence-parallel"); !sp.Switch || sp.Value != "" {
		t.Errorf("--sequence-parallel should be a switch: %+v", sp)
	}
	wantFlag(t, only(t, s, "--eval-prompt-data"), "aime /data/aime.jsonl", 7, "python3 train.py", "PERF_ARGS")
	wantFlag(t, only(t, s, "--context-parallel-size"), "4", 9, "python3 train.py", "PERF_ARGS")
	wantFlag(t, only(t, s, "--seed"), "1", 11, "python3 train.py", "")
	// an array no command uses is still reported, with no command
	wantFlag(t, only(t, s, "--lr"), "1e-6", 10, "", "EXTRA")
	if s.Context.TP == nil || *s.Context.TP != 2 || s.Context.CP == nil || *s.Context.CP != 4 {
		t.Errorf("context tp/cp = %v/%v", s.Context.TP, s.Context.CP)
	}
}

func TestContinuationAndQuotes(t *testing.T) {
	s := parseT(t, `NAME="my run"
python3 -m pkg.train \
    --name "$NAME" \
    --tag='a b' \
    --sep $'tab\there' \
    --path "/x/${NAME// /_}" \
    --plain it\'s
`, Options{})
	wantFlag(t, only(t, s, "--name"), "my run", 3, "python3 -m pkg.train", "")
	wantFlag(t, only(t, s, "--tag"), "a b", 4, "python3 -m pkg.train", "")
	wantFlag(t, only(t, s, "--sep"), "tab\there", 5, "python3 -m pkg.train", "")
	wantFlag(t, only(t, s, "--path"), "/x/my_run", 6, "python3 -m pkg.train", "")
	wantFlag(t, only(t, s, "--plain"), "it's", 7, "python3 -m pkg.train", "")
	if raw := only(t, s, "--name").Raw; raw != `--name "$NAME"` {
		t.Errorf("raw = %q", raw)
	}
}

func TestVariablesDefaultsAndArithmetic(t *testing.T) {
	s := parseT(t, `TP=${TP:-4}
PP="${PP:=2}"
CP=${CP:-1}
WORLD=$(( TP * PP * ${NODES:-2} ))
HALF=$((WORLD / 2 + 1))
ALT=${TP:+set}
export NCCL_DEBUG=INFO
MODE=${1:-sync}
python3 train.py --tp $TP --pp $PP --cp $CP --world $WORLD --half $HALF --alt $ALT --who $USER --mode $MODE --pp-again $PP
`, Options{Env: map[string]string{"CP": "8"}, Args: []string{"async"}})
	for flag, want := range map[string]string{"--tp": "4", "--pp": "2", "--cp": "8", "--world": "16", "--half": "9",
		"--alt": "set", "--who": "$USER", "--mode": "async", "--pp-again": "2"} {
		if got := only(t, s, flag).Value; got != want {
			t.Errorf("%s = %q, want %q", flag, got, want)
		}
	}
	env := only(t, s, "NCCL_DEBUG")
	if env.Command != "env" || env.Value != "INFO" || env.Line != 7 {
		t.Errorf("export row = %+v", env)
	}
	if w := only(t, s, "WORLD"); w.Value != "16" || w.Raw != "$(( TP * PP * ${NODES:-2} ))" {
		t.Errorf("WORLD row = %+v", w)
	}
}

func TestSourceResolution(t *testing.T) {
	files := map[string]string{
		"/job/models/qwen3-4B.sh": `MODEL_ARGS=(
   --num-layers 36
   --hidden-size 2560
)
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
`,
		"/job/models/common.sh": `COMMON_ARGS=(--swiglu)
`,
		"/cfg/kimi.sh": `KIMI_ARGS=(--num-experts 384)
`,
		"/job/models/other.sh": `OTHER=1
`,
	}
	s := parseT(t, `SCRIPT_DIR="$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" &>/dev/null && pwd)"
source "${SCRIPT_DIR}/models/qwen3-4B.sh"
. "${MODEL_CONFIG_DIR}/kimi.sh"
source "${UNSET_DIR}/other.sh"
python3 train.py "${MODEL_ARGS[@]}" "${COMMON_ARGS[@]}" "${KIMI_ARGS[@]}"
`, Options{Env: map[string]string{"MODEL_CONFIG_DIR": "/cfg"}, readFile: memFS(files)})
	wantFlag(t, only(t, s, "--num-layers"), "36", 2, "python3 train.py", "MODEL_ARGS")
	if f := only(t, s, "--num-layers"); f.File != "/job/models/qwen3-4B.sh" {
		t.Errorf("file = %q", f.File)
	}
	if f := only(t, s, "--swiglu"); f.File != "/job/models/common.sh" || f.Line != 1 {
		t.Errorf("nested source: %+v", f)
	}
	if f := only(t, s, "--num-experts"); f.File != "/cfg/kimi.sh" || f.Value != "384" {
		t.Errorf("MODEL_CONFIG_DIR source: %+v", f)
	}
	if len(s.Sources) != 4 {
		t.Fatalf("sources = %+v", s.Sources)
	}
	// ${UNSET_DIR}/other.sh is found by searching the script's folder
	if got := s.Sources[3]; got.Resolved != "/job/models/other.sh" || got.How != "search" || got.Line != 4 {
		t.Errorf("searched source = %+v", got)
	}
	if want := []string{"/job/run.sh", "/job/models/qwen3-4B.sh", "/job/models/common.sh", "/cfg/kimi.sh", "/job/models/other.sh"}; strings.Join(s.Files, ",") != strings.Join(want, ",") {
		t.Errorf("files = %q", s.Files)
	}
	if len(s.Problems) != 0 {
		t.Errorf("problems: %v", s.Problems)
	}
}

func TestSourceSearchRoot(t *testing.T) {
	files := map[string]string{"/repo/scripts/models/glm4-9B.sh": "MODEL_ARGS=(--num-layers 40)\n"}
	s := parseT(t, "source \"${MODEL_CONFIG_DIR}/glm4-9B.sh\"\npython3 train.py \"${MODEL_ARGS[@]}\"\n",
		Options{SearchRoot: "/repo/scripts", readFile: memFS(files)})
	if f := only(t, s, "--num-layers"); f.File != "/repo/scripts/models/glm4-9B.sh" || f.Value != "40" {
		t.Errorf("%+v", f)
	}
	if len(s.Problems) != 0 || s.Context.Layers == nil || *s.Context.Layers != 40 {
		t.Errorf("problems %v layers %v", s.Problems, s.Context.Layers)
	}
	// without the search root nothing is found: a problem, and the rest parses
	s = parseT(t, "source \"${MODEL_CONFIG_DIR}/glm4-9B.sh\"\npython3 train.py --tp 2\n", Options{readFile: memFS(files)})
	wantProblem(t, s, "/job/run.sh:1: source \"${MODEL_CONFIG_DIR}/glm4-9B.sh\": ${MODEL_CONFIG_DIR}/glm4-9B.sh: no such file")
	if only(t, s, "--tp").Value != "2" {
		t.Error("partial results")
	}
}

func TestBranches(t *testing.T) {
	s := parseT(t, `MODE=${1:-"async"}
if [ "$MODE" = "sync" ]; then
    ARGS=(--colocate)
elif [[ $MODE == as* ]]; then
    ARGS=(--fully-async)
else
    ARGS=(--hybrid)
fi
if [ -f /etc/hosts ]; then
    ARGS+=(--maybe)
fi
if (( 2 > 1 )) && [ -n "$MODE" ]; then
    ARGS+=(--always)
fi
python3 train.py "${ARGS[@]}"
`, Options{})
	cases := []struct {
		flag   string
		branch string
		taken  Taken
	}{
		{"--colocate", `if [ "$MODE" = "sync" ]`, TakenNo},
		{"--fully-async", `elif [[ $MODE == as* ]]`, TakenYes},
		{"--hybrid", `else (not: [ "$MODE" = "sync" ]; [[ $MODE == as* ]])`, TakenNo},
		{"--maybe", `if [ -f /etc/hosts ]`, TakenUnknown},
		{"--always", `if (( 2 > 1 )) && [ -n "$MODE" ]`, TakenYes},
	}
	for _, c := range cases {
		f := only(t, s, c.flag)
		if f.Branch != c.branch || f.Taken != c.taken || f.Command != "python3 train.py" {
			t.Errorf("%s: branch %q %v command %q; want %q %v", c.flag, f.Branch, f.Taken, f.Command, c.branch, c.taken)
		}
	}
	if m := s.Context.Mode; m == nil || *m != "fully-async" {
		t.Errorf("mode = %v", m)
	}
	// the launch itself inside an unknown branch
	s = parseT(t, `if [ "$NVLINK" -gt 0 ]; then X=1; else X=0; fi
python3 train.py --nvls $X
`, Options{})
	if f := only(t, s, "--nvls"); f.Value != "$X" || f.Taken != TakenYes {
		t.Errorf("a variable set in unknown branches is unknown: %+v", f)
	}
	if xs := all(s, "X"); len(xs) != 2 || xs[0].Taken != TakenUnknown || xs[1].Taken != TakenUnknown {
		t.Errorf("X rows: %+v", xs)
	}
}

func TestCase(t *testing.T) {
	src := `case "$MODE" in
  async|fully-async)
    python3 train.py --fully-async ;;
  sync) python3 train.py --colocate
    ;;
  *)
    python3 train.py --hybrid ;;
esac
`
	for _, tc := range []struct {
		mode  string
		taken map[string]Taken
	}{
		{"fully-async", map[string]Taken{"--fully-async": TakenYes, "--colocate": TakenNo, "--hybrid": TakenNo}},
		{"sync", map[string]Taken{"--fully-async": TakenNo, "--colocate": TakenYes, "--hybrid": TakenNo}},
		{"other", map[string]Taken{"--fully-async": TakenNo, "--colocate": TakenNo, "--hybrid": TakenYes}},
		{"", map[string]Taken{"--fully-async": TakenUnknown, "--colocate": TakenUnknown, "--hybrid": TakenUnknown}},
	} {
		opt := Options{}
		if tc.mode != "" {
			opt.Env = map[string]string{"MODE": tc.mode}
		}
		s := parseT(t, src, opt)
		for flag, want := range tc.taken {
			if got := only(t, s, flag).Taken; got != want {
				t.Errorf("MODE=%q %s: %v, want %v", tc.mode, flag, got, want)
			}
		}
		if b := only(t, s, "--colocate").Branch; b != `case "$MODE" in sync)` {
			t.Errorf("branch = %q", b)
		}
	}
}

func TestCommentAttachment(t *testing.T) {
	s := parseT(t, `OPT=(
   --optimizer adam

   # NOTE(alice): off on purpose, algorithm quality
   --no-rope-fusion
   --moe-aux-loss-coeff 0.0
   # --sglang-cuda-graph-bs 1 2 4
   --attention-backend flash # FA3 is slower here

   # plain comment
   --lr 1e-6
   --min-lr 0
)
# NOTE: keep this below 0.8
python3 train.py "${OPT[@]}" \
   --mem 0.7
`, Options{})
	note := "NOTE(alice): off on purpose, algorithm quality"
	for flag, want := range map[string]string{
		"--optimizer":          "",
		"--no-rope-fusion":     note,
		"--moe-aux-loss-coeff": note,
		"--attention-backend":  note + "\nFA3 is slower here",
		"--lr":                 "plain comment",
		"--min-lr":             "",
	} {
		if got := only(t, s, flag).Comment; got != want {
			t.Errorf("%s comment = %q, want %q", flag, got, want)
		}
	}
	off := only(t, s, "--sglang-cuda-graph-bs")
	if off.Branch != "commented out" || off.Taken != TakenNo || off.Value != "1 2 4" || off.Array != "OPT" || off.Command != "python3 train.py" {
		t.Errorf("commented-out flag = %+v", off)
	}
	// a NOTE heads its block: the command and its continuation lines
	if c := only(t, s, "--mem").Comment; c != "NOTE: keep this below 0.8" {
		t.Errorf("--mem comment = %q", c)
	}
}

func TestLaunchCommandsAndFlagForms(t *testing.T) {
	s := parseT(t, `ray job submit --address="http://127.0.0.1:8265" --no-wait -- python3 train.py --lr=1e-5 --top-k -1 --name x
torchrun --nproc_per_node 8 --nnodes=2 pretrain_gpt.py --tensor-model-parallel-size 8
CUDA_VISIBLE_DEVICES=0,1 nohup python -u -m verl.trainer.main_ppo data.train_batch_size=1024 +trainer.extra=1 ~trainer.drop --config-name=ppo actor.lr=1e-6 > log 2>&1 &
bash -c "deepspeed --num_gpus 4 ds_train.py --zero-stage 3"
echo --not-a-flag
mkdir -p log && stdbuf -oL ray start --head --num-gpus 8
`, Options{})
	wantFlag(t, only(t, s, "--address"), "http://127.0.0.1:8265", 1, "ray job submit", "")
	if f := only(t, s, "--no-wait"); !f.Switch || f.Command != "ray job submit" {
		t.Errorf("--no-wait = %+v", f)
	}
	wantFlag(t, only(t, s, "--lr"), "1e-5", 1, "python3 train.py", "")
	wantFlag(t, only(t, s, "--top-k"), "-1", 1, "python3 train.py", "")
	wantFlag(t, only(t, s, "--nproc_per_node"), "8", 2, "torchrun", "")
	wantFlag(t, only(t, s, "--nnodes"), "2", 2, "torchrun", "")
	wantFlag(t, only(t, s, "--tensor-model-parallel-size"), "8", 2, "torchrun pretrain_gpt.py", "")
	wantFlag(t, only(t, s, "data.train_batch_size"), "1024", 3, "python -m verl.trainer.main_ppo", "")
	wantFlag(t, only(t, s, "trainer.extra"), "1", 3, "python -m verl.trainer.main_ppo", "")
	if f := only(t, s, "trainer.drop"); !f.Switch || f.Raw != "~trainer.drop" {
		t.Errorf("~trainer.drop = %+v", f)
	}
	wantFlag(t, only(t, s, "--config-name"), "ppo", 3, "python -m verl.trainer.main_ppo", "")
	wantFlag(t, only(t, s, "actor.lr"), "1e-6", 3, "python -m verl.trainer.main_ppo", "")
	wantFlag(t, only(t, s, "CUDA_VISIBLE_DEVICES"), "0,1", 3, "env", "")
	wantFlag(t, only(t, s, "--num_gpus"), "4", 4, "deepspeed", "")
	wantFlag(t, only(t, s, "--zero-stage"), "3", 4, "deepspeed ds_train.py", "")
	wantFlag(t, only(t, s, "--num-gpus"), "8", 6, "ray start", "")
	if len(all(s, "--not-a-flag")) != 0 {
		t.Error("echo is not a launch command")
	}
	var names []string
	for _, c := range s.Commands {
		names = append(names, c.Name)
	}
	want := "ray job submit|python3 train.py|torchrun|torchrun pretrain_gpt.py|python -m verl.trainer.main_ppo|deepspeed|deepspeed ds_train.py|ray start"
	if strings.Join(names, "|") != want {
		t.Errorf("commands = %q", names)
	}
}

func TestWordSplittingOfUnquotedArrays(t *testing.T) {
	// Megatron's examples keep "--flag value" in one element and expand
	// the array unquoted: bash splits it into two words.
	s := parseT(t, `DTYPE=fp8
ARGS=()
if [[ "$DTYPE" == "fp8" ]]; then
    ARGS+=(
        "--fp8-format hybrid"
        "--data-cache-path ${PWD}/cache"
    )
fi
torchrun --nproc_per_node 8 pretrain_gpt.py ${ARGS[@]} "--quoted kept"
`, Options{})
	f := only(t, s, "--fp8-format")
	wantFlag(t, f, "hybrid", 5, "torchrun pretrain_gpt.py", "ARGS")
	if f.Branch != `if [[ "$DTYPE" == "fp8" ]]` || f.Taken != TakenYes || f.Raw != `"--fp8-format hybrid"` {
		t.Errorf("%+v", f)
	}
	wantFlag(t, only(t, s, "--data-cache-path"), "${PWD}/cache", 6, "torchrun pretrain_gpt.py", "ARGS")
	if len(all(s, "--quoted kept")) != 1 {
		t.Errorf("a quoted word is one word: %+v", s.Flags)
	}
}

func TestMalformedInput(t *testing.T) {
	t.Run("unterminated array", func(t *testing.T) {
		s := parseT(t, "A=1\nARGS=(\n  --lr 1\n  --tp 2\npython3 train.py\n", Options{})
		wantProblem(t, s, "/job/run.sh:2: unterminated array ARGS=( ... ): expected ) before the end of the file")
		if only(t, s, "A").Value != "1" {
			t.Error("rows before the bad array are kept")
		}
		if f := only(t, s, "--lr"); f.Value != "1" || f.Command != "" {
			t.Errorf("the elements read so far are kept: %+v", f)
		}
	})
	t.Run("unterminated quote", func(t *testing.T) {
		s := parseT(t, "python3 train.py --lr 1\nX=\"abc\npython3 train.py --tp 2\n", Options{})
		wantProblem(t, s, `/job/run.sh:2: unterminated double quote: expected " before the end of the file`)
		if only(t, s, "--lr").Value != "1" {
			t.Error("partial results")
		}
		s = parseT(t, "python3 train.py --name 'abc\n", Options{})
		wantProblem(t, s, "/job/run.sh:1: unterminated single quote: expected ' before the end of the file")
	})
	t.Run("missing sourced file", func(t *testing.T) {
		s := parseT(t, "X=1\n\nsource ./models/missing.sh\npython3 train.py \"${MODEL_ARGS[@]}\" --tp 2\n", Options{})
		wantProblem(t, s, "/job/run.sh:3: source ./models/missing.sh: /job/models/missing.sh: no such file")
		wantProblem(t, s, "/job/run.sh:4: array MODEL_ARGS is expanded but never defined (a sourced file may be missing)")
		if only(t, s, "--tp").Value != "2" {
			t.Error("parsing continues after a missing file")
		}
		if err := s.Err(); err == nil || !strings.Contains(err.Error(), "missing.sh") {
			t.Errorf("Err() = %v", err)
		}
	})
	t.Run("missing fi and done", func(t *testing.T) {
		s := parseT(t, "if [ x = x ]; then\n python3 a.py --a 1\n", Options{})
		wantProblem(t, s, "/job/run.sh:1: if: expected fi before the end of the file")
		if f := only(t, s, "--a"); f.Taken != TakenYes {
			t.Errorf("%+v", f)
		}
		s = parseT(t, "for i in 1 2; do\n echo $i\n", Options{})
		wantProblem(t, s, "/job/run.sh:1: for: expected done before the end of the file")
	})
	t.Run("binary file", func(t *testing.T) {
		s, err := Parse("/job/model.bin", []byte("\x7fELF\x02\x01\x01\x00\x00\x00"), Options{readFile: memFS(nil)})
		var p Problem
		if !errors.As(err, &p) || err.Error() != "/job/model.bin:1: binary file (NUL byte at offset 7): expected a shell script" {
			t.Fatalf("err = %v", err)
		}
		if s == nil || len(s.Problems) != 1 || s.Context.Framework != "unknown" {
			t.Errorf("a Script is returned with the problem: %+v", s)
		}
	})
	t.Run("binary sourced file", func(t *testing.T) {
		s := parseT(t, "source ./blob.sh\npython3 x.py --a 1\n", Options{readFile: memFS(map[string]string{"/job/blob.sh": "abc\x00def"})})
		wantProblem(t, s, "/job/blob.sh:1: binary file (NUL byte at offset 3): expected a shell script")
		if only(t, s, "--a").Value != "1" {
			t.Error("partial results")
		}
	})
	t.Run("self source", func(t *testing.T) {
		s := parseT(t, "source ./loop.sh\n", Options{readFile: memFS(map[string]string{"/job/loop.sh": "LOOP=1\nsource ./loop.sh\n"})})
		wantProblem(t, s, "/job/loop.sh:2: source ./loop.sh: /job/loop.sh sources itself")
	})
}

func wantProblem(t *testing.T, s *Script, want string) {
	t.Helper()
	var got []string
	for _, p := range s.Problems {
		if p.Error() == want {
			return
		}
		got = append(got, p.Error())
	}
	t.Errorf("no problem %q in %q", want, got)
}

func TestFileNameConvention(t *testing.T) {
	for _, tc := range []struct {
		base, model, acc string
		gpus             int64
		tags             string
	}{
		{"run-qwen3-30B-A3B-16xgpu-async", "qwen3-30B-A3B", "gpu", 16, "async"},
		{"run-qwen36-35B-A3B-fp8-8xgpu-image", "qwen36-35B-A3B", "gpu", 8, "fp8,image"},
		{"run-kimi-k2.6-256xgpu-int4", "kimi-k2.6", "gpu", 256, "int4"},
		{"run-qwen35-35B-A3B-16xnpu-colocate", "qwen35-35B-A3B", "npu", 16, "colocate"},
		{"run-qwen35-27B-8xgpu-openr1mm-hybrid-async", "qwen35-27B", "gpu", 8, "async,hybrid,openr1mm"},
	} {
		fn := parseFileName(tc.base)
		var tags []string
		for k := range fn.tags {
			tags = append(tags, k)
		}
		sort.Strings(tags)
		if fn.model != tc.model || fn.acc != tc.acc || fn.gpus == nil || *fn.gpus != tc.gpus || strings.Join(tags, ",") != tc.tags {
			t.Errorf("%s: model %q acc %q gpus %v tags %v", tc.base, fn.model, fn.acc, fn.gpus, tags)
		}
	}
	named, _ := Parse("/job/run-qwen3-4B-4xgpu-async.sh", []byte("echo hi\n"), Options{readFile: memFS(nil)})
	c := named.Context
	if c.GPUs == nil || *c.GPUs != 4 || c.Mode == nil || *c.Mode != "fully-async" || c.ModelSize == nil || *c.ModelSize != "4B" {
		t.Errorf("defaults from the file name: gpus %v mode %v size %v", c.GPUs, c.Mode, c.ModelSize)
	}
}

func TestGlobMatch(t *testing.T) {
	for _, tc := range []struct {
		pat, s string
		want   bool
	}{
		{"as*", "async", true}, {"*sync", "fully-sync", true}, {"a?c", "abc", true}, {"[ab]x", "bx", true},
		{"[!ab]x", "bx", false}, {`\*`, "*", true}, {"*", "", true}, {"a*b*c", "aXbYc", true}, {"a*b", "ac", false},
	} {
		if got := globMatch(tc.pat, tc.s); got != tc.want {
			t.Errorf("globMatch(%q, %q) = %v", tc.pat, tc.s, got)
		}
	}
}

// Nesting too deep skips the rest of the file with one problem, not one
// more per open if (200 of them once buried the report).
func TestTooDeepIsOneProblem(t *testing.T) {
	src := "python3 train.py --lr 1\n" + strings.Repeat("if true; then\n", 300) + "python3 b.py --x 2\n" + strings.Repeat("fi\n", 300)
	s := parseT(t, src, Options{})
	if len(s.Problems) != 1 || !strings.Contains(s.Problems[0].Error(), "nested too deeply") {
		t.Errorf("%d problems: %q", len(s.Problems), s.Problems[:min(3, len(s.Problems))])
	}
	if only(t, s, "--lr").Value != "1" {
		t.Errorf("the flags before the deep part are lost")
	}
}
