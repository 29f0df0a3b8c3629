#!/usr/bin/env bash
# How long a high-priority request waits for the work in flight when it arrives, per zoo model:
# each model runs flat out at normal priority on the runtime's scheduler (`nfuse stress`, traced)
# beside a probe (fashion_mnist_cnn, high priority, 200 Hz) whose arrivals ask the op in flight
# to yield at its next piece boundary. Reports the model's units (pieces included), the probe's
# wait p50 / p99 / max (what a realtime request waits), and the model's p50 request time.
#   bench/longest_units.sh [BUILD_DIR] [THREADS] [SECONDS]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}" THREADS="${2:-2}" SECONDS_EACH="${3:-3}"
MODELS="$BUILD/models"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
models=$(/usr/bin/python3 -c "import json,sys; print(' '.join(m['name'] for m in json.load(open(sys.argv[1]))['models']))" \
  "$MODELS/models.json")
printf '%-28s %6s %22s %12s\n' model units "probe wait p50/p99/max" "request ms"
for m in $models; do
  "$BUILD/nfuse" stress --context "m:$MODELS/$m.onnx:normal:0" \
    --context "probe:$MODELS/fashion_mnist_cnn.onnx:high:200" --threads "$THREADS" --duration "$SECONDS_EACH" \
    --solo 0.5 --no-baseline --trace "$tmp/$m.json" --json "$tmp/$m.report.json" >/dev/null 2>&1 || {
    printf '%-28s %s\n' "$m" "(failed: see nfuse stress)"; continue; }
  /usr/bin/python3 - "$m" "$tmp/$m.json" "$tmp/$m.report.json" <<'PY'
import json, statistics, sys
name, trace, report = sys.argv[1:]
events = json.load(open(trace))["traceEvents"]
units = max(int(e["name"].rpartition(" unit ")[2]) for e in events
            if e.get("cat") == "unit" and e["name"].startswith("m unit "))
waits = sorted(e["args"]["queued_us"] / 1000.0 for e in events
               if e.get("cat") == "request" and e["name"].startswith("probe #"))
p99 = waits[min(len(waits) - 1, int(len(waits) * 0.99))]
p50 = json.load(open(report))["contexts"]["m"]["p50_ms"]
print("%-28s %6d %8.2f %6.2f %6.2f %12.2f" % (name, units, statistics.median(waits), p99, waits[-1], p50))
PY
done
