#!/usr/bin/env bash
# Builds bench/sample/, the small multi-rank run that `make demo` analyses:
# the two real ranks (0 and 1 of a 128-rank job) that Holistic Trace
# Analysis ships as trace_filter/sampled_rank-{0,1}, copied unchanged and
# renamed the way tensorboard_trace_handler names rank files.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
src=${CORPUS:-$here/../../shared/corpus}/kineto/hta
out=$here/sample
mkdir -p "$out"
for r in 0 1; do
  install -m 644 "$src/tests__data__trace_filter__sampled_rank-$r.json.gz" "$out/rank-$r.sampled.pt.trace.json.gz"
done
du -ch "$out"/* | tail -1
