#!/usr/bin/env bash
# The profiler's own cost, on a lent GPU machine (the workplace's device
# tool): each scenario run three ways, so that what a profiled trace shows
# can be checked against the job's own speed. Brings back in $OUT:
#   log.txt         everything printed
#   timings.json    --mode none: the host time of each step the profiler would
#                   record, no profiler attached (the job's own step time)
#   lean.tar.xz     --mode lean: the traces with no shapes and no Python stacks
# The full traces (shapes and stacks) are device.sh's.
set -uo pipefail
out=${OUT:-/tmp/device-out}
work=${WORK:-/tmp/ts-work}
mkdir -p "$out" "$work"
exec > >(tee "$out/log.txt") 2>&1
only=${ONLY:-healthy,stall_once,slow_input,sync,pageable_h2d,fp32,launch_bound,small_batch,weak_stall,logged,workers}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
export PYTHONUNBUFFERED=1
timeout "${NONE_S:-150}" python3 bench/gpu/scenarios.py --mode none --out "$work/none" --only "$only"
cp "$work/none/timings.json" "$out/" 2>/dev/null
python3 -c 'import json, statistics, sys
for k, v in json.load(open(sys.argv[1])).items(): print(f"{k}: median step {statistics.median(v):.1f} ms, steps {v}")' "$work/none/timings.json"
timeout "${LEAN_S:-200}" python3 bench/gpu/scenarios.py --mode lean --out "$work/lean" --only "$only"
find "$work/lean" -name '*.json.gz' -exec gzip -d {} +
tar -C "$work" -cf - lean | xz -T0 -6 > "$out/lean.tar.xz"
ls -la "$out"
sleep 1
