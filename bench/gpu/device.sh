#!/usr/bin/env bash
# One prepared run on a lent GPU machine (the workplace's device tool), in
# the repository's root there, that brings back in $OUT (at most 8 files of
# 16 MiB each):
#   log.txt        everything printed, with the card, torch and the timings
#   curve.tsv      issue 38 item 4: trainscope analyze on syn8 and r512 at
#                  --threads 1, 2, 4, 8 and 16 (wall, user, sys, peak RSS)
#   run.tar.xz.NN  bench/gpu/scenarios.py's traces, snapshot, ncu capture and
#                  labels.json, as xz'd tar cut in 15 MiB pieces
#                  (cat run.tar.xz.* | xz -dc | tar x)
# It needs, in .dev/ (ignored by git, named in the call's carry):
#   trainscope.xz  go build -tags duckdb_arrow -ldflags "-s -w" ., xz -9
#   scale          go build -ldflags "-s -w" ./bench/scale
#   hta-df_index_resolver.json.gz   the corpus trace syn8 is made of
# Each phase has its own deadline, so the bundle at the end is always made.
# SKIP_SCENARIOS=1 runs the curve alone; INPUTS and THREADS choose its runs.
set -uo pipefail
repo=$(pwd)
out=${OUT:-/tmp/device-out}
mkdir -p "$out"
exec > >(tee "$out/log.txt") 2>&1
start=$(date +%s)
elapsed() { echo $(( $(date +%s) - start )); }
say() { echo "[$(elapsed) s] $*"; }

say "machine: $(nproc) cores, $(free -g | awk '/Mem:/ {print $2}') GB"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)'
work=${WORK:-/tmp/ts-work}
mkdir -p "$work"
python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' \
  .dev/trainscope.xz "$work/trainscope"
chmod +x "$work/trainscope" .dev/scale
"$work/trainscope" version || say "trainscope does not start here"

# the curve's inputs, made at low priority while the GPU scenarios run
( nice -n 19 .dev/scale -in .dev/hta-df_index_resolver.json.gz -ranks 8 -out "$work/syn8" >/dev/null &&
  nice -n 19 .dev/scale -in bench/sample/rank-0.sampled.pt.trace.json.gz -ranks 512 -out "$work/r512" -level 1 >/dev/null &&
  touch "$work/inputs-ready" ) &
inputs=$!

if [ -z "${SKIP_SCENARIOS:-}" ]; then
  say "scenarios (deadline ${SCENARIO_S:=300} s)"
  PYTHONUNBUFFERED=1 timeout "$SCENARIO_S" python3 bench/gpu/scenarios.py --out "$work/run"
  say "scenarios exit $?"
fi
wait "$inputs" # not a bare wait: that waits for the tee too

say "curve (deadline ${CURVE_S:=170} s from here)"
curve_end=$(( $(elapsed) + CURVE_S ))
printf 'input\tthreads\twall_s\tuser_s\tsys_s\tpeak_kb\trc\n' > "$out/curve.tsv"
measure() { # input threads
  cp "$work/trainscope" "$work/ts-$1-$2" # a fresh copy per run (bench/README.md: huge pages)
  python3 - "$work/ts-$1-$2" "$work/$1" "$2" "$work/timing-$1-$2.txt" <<'PY' >> "$out/curve.tsv"
import resource, subprocess, sys, time
exe, inp, threads, log = sys.argv[1:]
t = time.time()
with open(log, "w") as f:
    rc = subprocess.run([exe, "analyze", inp, "-q", "--timing", "--format", "json", "--threads", threads],
                        stdout=subprocess.DEVNULL, stderr=f).returncode
wall = time.time() - t
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
print(f"{inp.rsplit('/', 1)[-1]}\t{threads}\t{wall:.2f}\t{ru.ru_utime:.2f}\t{ru.ru_stime:.2f}\t{ru.ru_maxrss}\t{rc}")
PY
  rm -f "$work/ts-$1-$2"
  say "$(tail -1 "$out/curve.tsv")"
  head -2 "$work/timing-$1-$2.txt"
}
if [ -e "$work/inputs-ready" ]; then
  for input in ${INPUTS:-syn8 r512}; do
    for t in ${THREADS:-16 8 4 2 1}; do
      [ "$(elapsed)" -lt "$curve_end" ] || { say "curve: out of time before $input at $t"; break 2; }
      measure "$input" "$t"
    done
  done
else
  say "curve: inputs not made"
fi

say "bundle"
mkdir -p "$work/run"
cd "$work" && find run -name '*.json.gz' -size +1k -exec gzip -d {} + 2>/dev/null
if command -v xz >/dev/null; then
  tar -C "$work" -cf - run | xz -T0 -6 | split -b 15M -d - "$out/run.tar.xz."
else
  tar -C "$work" -cf - run | python3 -c 'import lzma, sys; sys.stdout.buffer.write(lzma.compress(sys.stdin.buffer.read(), preset=3))' |
    split -b 15M -d - "$out/run.tar.xz."
fi
ls -la "$out"
say "done"
sleep 1 # tee writes the last lines
