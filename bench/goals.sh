#!/usr/bin/env bash
# goals.sh: the speed and memory goals (issue "Speed and memory") measured
# in one sitting, side by side with HTA, and printed as a markdown table.
#
#   bash bench/goals.sh            # 2 runs of each analyze, ~3 minutes
#   RUNS=4 BIG=1 bash bench/goals.sh
#
# RUNS: analyze runs of each tool, alternated (default 2).
# BIG=1: also the 1.5 and 3 GB single-rank traces (bench/bigtrace; ~4.5 GB
#   of disk under bench/tmp and ~2 minutes more).
# HTA runs when ../shared/anchors/hta is there with its Debian packages
# (see its README); otherwise its rows say so and the ratio is left out.
# Every trainscope run is a fresh copy of the binary (bench/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${RUNS:-2}
corpus=${CORPUS:-../shared/corpus}
anchors=${ANCHORS:-../shared/anchors}
time_cmd=/usr/bin/time
[ -x "$time_cmd" ] || { echo "goals.sh: needs GNU time at $time_cmd (apt-get install time)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say() { echo "goals.sh: $*" >&2; }

say "building trainscope and bench/pipeline"
go build -tags duckdb_arrow -o "$work/trainscope" .
go build -tags duckdb_arrow -o "$work/pipeline" ./bench/pipeline

if [ ! -d bench/syn8 ]; then
  say "making bench/syn8 (8 ranks, 430 MB of JSON)"
  go run ./bench/scale -in "$corpus/kineto/hta/tests__data__df_index_resolver__df_index_resolver.json.gz" -ranks 8 -out bench/syn8
fi
if [ ! -d bench/tmp/r64 ]; then
  say "making bench/tmp/r64 (64 small ranks)"
  go run -tags duckdb_arrow ./bench/scale -in bench/sample/rank-0.sampled.pt.trace.json.gz -ranks 64 -out bench/tmp/r64 -level 1
fi

if [ ! -d bench/tmp/r512 ]; then
  say "making bench/tmp/r512 (512 small ranks)"
  go run -tags duckdb_arrow ./bench/scale -in bench/sample/rank-0.sampled.pt.trace.json.gz -ranks 512 -out bench/tmp/r512 -level 1
fi

# secs: a Go duration as printed (1.2s, 950ms) in seconds
secs() { awk '{v=$1; if (v ~ /ms$/) {sub(/ms$/, "", v); v/=1000} else sub(/s$/, "", v); print v}'; }

# analyze DIR: one fresh-copy run; prints "wall_s peak_mb detectors_s
# planning_s", planning summed over the detector queries
analyze() {
  cp "$work/trainscope" "$work/ts-run"
  "$time_cmd" -f '%e %M' -o "$work/time" "$work/ts-run" analyze "$1" -q --timing --format json -o "$work/report.json" 2> "$work/timing"
  local det plan
  det=$(grep -o 'detectors [0-9.]*m\?s' "$work/timing" | head -1 | awk '{print $2}' | secs)
  plan=$(grep -o 'detector queries: planning [0-9.]*m\?s' "$work/timing" | awk '{print $4}' | secs)
  awk -v d="$det" -v p="${plan:-n/a}" '{printf "%s %.0f %s %s\n", $1, $2/1024, d, p}' "$work/time"
}

hta_ok=0
if [ -d "$anchors/hta" ] && PYTHONPATH="$anchors/hta" /usr/bin/python3 -c 'import hta' 2>/dev/null; then
  hta_ok=1
else
  say "HTA is not set up here ($anchors/hta, see its README): no ratio"
fi

: > "$work/ts" ; : > "$work/hta" ; : > "$work/small" ; : > "$work/r512"
for i in $(seq "$runs"); do
  if [ "$hta_ok" = 1 ]; then
    say "HTA run $i of $runs on bench/syn8"
    PYTHONPATH="$anchors/hta" "$time_cmd" -f '%e %M' -o "$work/htatime" /usr/bin/python3 "$anchors/hta_bench.py" bench/syn8 all "$work/hta_out" goals > /dev/null 2>&1
    # peak: the summed RSS of HTA and its parsing pool, as its driver samples it
    tree=$(tail -1 "$work/hta_out/timings.jsonl" | grep -o '"peak_tree_rss_bytes": [0-9]*' | awk '{printf "%.0f", $2/1048576}')
    awk -v t="$tree" '{printf "%s %s\n", $1, t}' "$work/htatime" >> "$work/hta"
  fi
  say "trainscope run $i of $runs on bench/syn8"
  analyze bench/syn8 >> "$work/ts"
  say "trainscope run $i of $runs on bench/sample and bench/tmp/r512"
  analyze bench/sample >> "$work/small"
  analyze bench/tmp/r512 >> "$work/r512"
done

# span FILE COL: "min-max" of a column
span() { awk -v c="$2" 'NR==1{lo=hi=$c} {if ($c<lo) lo=$c; if ($c>hi) hi=$c} END{if (NR==0) print "n/a"; else if (lo==hi) print lo; else print lo "-" hi}' "$1"; }

# met VALUE OP BOUND: "yes" when VALUE (a number or "lo-hi": the worse end
# counts) is OP (>= or <=) BOUND
met() { awk -v a="$1" -v op="$2" -v b="$3" 'BEGIN{split(a, x, "-"); v=(op=="<=")?x[length(x)]:x[1]; if ((op==">=" && v+0>=b+0) || (op=="<=" && v+0<=b+0)) print "yes"; else print "no"}'; }

# pipeline ARGS...: prints "events_per_s_millions p99_ms"
pipeline() {
  cp "$work/pipeline" "$work/pl-run"
  "$work/pl-run" "$@" > "$work/plout" 2>&1
  local rate p99
  rate=$(grep -o '= [0-9.]*M events/s' "$work/plout" | awk '{print $2}' | tr -d M)
  p99=$(grep -o 'p99 [0-9]* ms' "$work/plout" | awk '{print $2}')
  echo "$rate $p99"
}
say "always-on: bench/syn8 x 2 drained by one ingestor"
read -r drain_rate _ < <(pipeline -traces bench/syn8 -copies 2 -drain)
say "always-on: bench/tmp/r64 x 16 drained (many small traces)"
read -r small_rate _ < <(pipeline -traces bench/tmp/r64 -copies 16 -drain)
say "always-on: bench/syn8 x 2 offered at 1M events/s, publisher beside"
read -r offered_rate offered_p99 < <(pipeline -traces bench/syn8 -copies 2 -rate 1000000)

big_rows=""
if [ "${BIG:-0}" = 1 ]; then
  for n in 35 70; do
    f=$(ls bench/tmp/big$n/rank-0.pt.trace.json* 2>/dev/null | head -1 || true)
    if [ -z "$f" ]; then
      f=bench/tmp/big$n/rank-0.pt.trace.json
      say "making $f"
      go run ./bench/bigtrace -in "$(ls bench/syn8/rank-0.*.json.gz | head -1)" -copies "$n" -out "$f"
    fi
    say "trainscope on bench/tmp/big$n"
    read -r w p _ < <(analyze "bench/tmp/big$n")
    gb=$(stat -c %s "$f" | awk '{printf "%.2f", $1/1e9}')
    big_rows+="| one rank's trace of $gb GB of JSON ($n copies of syn8's rank 0) | | $w s, peak $p MB | <= 1 GB | $(met "$p" "<=" 1024) |"$'\n'
  done
fi

ts_wall=$(span "$work/ts" 1); ts_peak=$(span "$work/ts" 2); ts_det=$(span "$work/ts" 3)
if [ "$hta_ok" = 1 ]; then
  hta_wall="$(span "$work/hta" 1) s"; hta_peak="$(span "$work/hta" 2) MB (with its parsing pool)"
  ratio=$(paste "$work/hta" "$work/ts" | awk 'NR==1{lo=hi=$1/$3} {r=$1/$3; if (r<lo) lo=r; if (r>hi) hi=r} END{if (sprintf("%.1f", lo) == sprintf("%.1f", hi)) printf "%.1fx", lo; else printf "%.1f-%.1fx", lo, hi}')
else
  hta_wall="not run"; hta_peak="not run"; ratio="n/a"
fi

echo "| goal | HTA | trainscope | target | met |"
echo "| --- | --- | --- | --- | --- |"
[ "$runs" = 1 ] && each="1 run of each" || each="$runs runs each, alternated"
echo "| syn8 analyze, whole process ($each) | $hta_wall | $ts_wall s | | |"
echo "| syn8: times faster than HTA (each run against the HTA run before it) | | $ratio | >= 20x | $( [ "$ratio" = n/a ] && echo n/a || met "${ratio%x}" ">=" 20) |"
echo "| syn8 peak memory | $hta_peak | $ts_peak MB | <= 300 MB | $(met "$ts_peak" "<=" 300) |"
echo "| syn8 detectors (\`--timing\`) | | $ts_det s | < 0.3 s | $(met "$ts_det" "<=" 0.3) |"
echo "| - their queries' planning, summed over the 2 connections | | $(span "$work/ts" 4) s | | |"
echo "| bench/sample detectors (9,575 events: the pass's fixed cost) | | $(span "$work/small" 3) s, planning $(span "$work/small" 4) s | | |"
echo "| r512 analyze (512 small ranks), whole process | | $(span "$work/r512" 1) s, peak $(span "$work/r512" 2) MB | <= 3 s | $(met "$(span "$work/r512" 1)" "<=" 3) |"
echo "| streaming, syn8 x 2 drained | | ${drain_rate}M events/s | >= 2M | $(met "$drain_rate" ">=" 2) |"
echo "| streaming, r64 x 16 drained (many small traces) | | ${small_rate}M events/s | >= 2M | $(met "$small_rate" ">=" 2) |"
echo "| syn8 x 2 offered at 1M events/s (publisher on the same cores) | | ${offered_rate}M events/s, p99 ${offered_p99} ms | p99 < 2 s | $(met "$offered_p99" "<=" 2000) |"
printf '%s' "$big_rows"
