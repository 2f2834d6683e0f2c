#!/usr/bin/env bash
# syn8: HTA's df_index_resolver trace copied to 8 ranks (only distributedInfo
# rank/world_size rewritten): 8 x 53.7 MB = 430 MB of JSON, 1.73M events.
# Builds it under bench/syn8/ when missing, then times `trainscope analyze`
# on it as a whole process, three runs, with GNU time.
set -euo pipefail
cd "$(dirname "$0")/.."
src=${CORPUS:-../shared/corpus}/kineto/hta/tests__data__df_index_resolver__df_index_resolver.json.gz
if [ ! -d bench/syn8 ]; then
  go run ./bench/scale -in "$src" -ranks 8 -out bench/syn8
fi
[ -x bin/trainscope ] || make build
time_cmd=/usr/bin/time
[ -x "$time_cmd" ] || { apt-get install -y -qq time >/dev/null 2>&1 || true; }
# each run on a fresh copy of the binary: one run many times from one file
# has its text in huge pages, which count whole in the peak (bench/README.md)
fresh=$(mktemp -d)
trap 'rm -rf "$fresh"' EXIT
for i in 1 2 3; do
  cp bin/trainscope "$fresh/trainscope-$i"
  "$time_cmd" -f "run $i: wall %e s, user %U s, sys %S s, peak RSS %M KB" \
    "$fresh/trainscope-$i" analyze bench/syn8 -q --timing > /dev/null
done
