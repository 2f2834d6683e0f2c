#!/usr/bin/env bash
# make demo: the always-on pipeline on one machine, then stopped cleanly.
# Starts 'trainscope serve' (embedded NATS + JetStream, ingestor, detector
# scheduler, Flight SQL, HTTP) in the background, publishes the bundled
# sample run, waits until it is ingested and analyzed, prints the report and
# how to query it, and stops the server.
set -euo pipefail

BIN=${BIN:-bin/trainscope}
OUT=${OUT:-out/demo}
SAMPLE=${SAMPLE:-bench/sample}
HTTP=${DEMO_HTTP:-127.0.0.1:17070}
FLIGHT=${DEMO_FLIGHT:-127.0.0.1:17071}
NATS=${DEMO_NATS:-127.0.0.1:14222}

rm -rf "$OUT"
mkdir -p "$OUT"
"$BIN" serve --data-dir "$OUT/data" --http "$HTTP" --flight "$FLIGHT" --nats-listen "$NATS" --quiet 1s --archive "$OUT/archive" \
  >"$OUT/serve.log" 2>&1 &
pid=$!
stop() {
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid"
    wait "$pid" || true
  fi
}
trap stop EXIT

for _ in $(seq 1 100); do
  curl -fsS "http://$HTTP/healthz" >/dev/null 2>&1 && break
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "serve exited; its log:" >&2
    cat "$OUT/serve.log" >&2
    exit 1
  fi
  sleep 0.1
done
echo "serve is up: NATS nats://$NATS, Flight SQL $FLIGHT, HTTP http://$HTTP (log: $OUT/serve.log)"

"$BIN" publish --run demo --host demo-node -q --nats-url "nats://$NATS" "$SAMPLE"

printf 'waiting for the run to be ingested and analyzed'
for _ in $(seq 1 600); do
  if curl -fsS "http://$HTTP/runs/demo/report" -o "$OUT/report.md" 2>/dev/null; then
    break
  fi
  printf .
  sleep 0.1
done
echo
test -s "$OUT/report.md" || { echo "no report after 60 s; serve log:" >&2; cat "$OUT/serve.log" >&2; exit 1; }
curl -fsS "http://$HTTP/runs/demo/report.json" -o "$OUT/report.json"
curl -fsS "http://$HTTP/runs/demo/report.html" -o "$OUT/report.html"

echo
# the report as served: the verdict first, then findings and
# recommendations (it fits one screen; report.json and .html hold every table)
cat "$OUT/report.md"
echo
echo "The findings, as any Flight SQL client sees them:"
"$BIN" sql --server "$FLIGHT" "SELECT severity, detector, rank, round(value, 3) AS value, threshold FROM findings WHERE run_id = 'demo' ORDER BY CASE severity WHEN 'critical' THEN 0 WHEN 'warn' THEN 1 ELSE 2 END, detector, rank"
echo
curl -fsS "http://$HTTP/metrics" | grep -E '^trainscope_(ingest_events_total|ingest_batches_total|ingest_rejected_total|detector_runs_total) '
echo
echo "report:   $OUT/report.md (and .json, and .html to open in a browser)"
echo "while a server runs, query it with:"
echo "  $BIN sql --server $FLIGHT \"SELECT * FROM metrics WHERE detector = 'temporal_breakdown'\""
echo "  curl http://$HTTP/metrics"
stop
trap - EXIT
echo "server stopped; its database: $BIN sql --db $OUT/data/trainscope.duckdb \"SELECT count(*) FROM slices\""
echo "its fleet archive (Parquet, day=/run= partitions): $OUT/archive; serve it as a query node with"
echo "  $BIN serve --query-only --archive $OUT/archive"
