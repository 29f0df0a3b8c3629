#!/usr/bin/env bash
# The longest non-pre-emptible unit of each zoo model on the runtime's scheduler: how long a
# realtime request can wait for the unit in flight when it arrives. Each model runs flat out alone
# (`nfuse stress`, traced) for SECONDS; per unit position the median duration over the requests,
# then the largest of those medians (and the unit count, and the p50 request time for scale).
#   bench/longest_units.sh [BUILD_DIR] [THREADS] [SECONDS]      env BACKEND (auto)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}" THREADS="${2:-2}" SECONDS_EACH="${3:-3}"
MODELS="$BUILD/models"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
models=$(/usr/bin/python3 -c "import json,sys; print(' '.join(m['name'] for m in json.load(open(sys.argv[1]))['models']))" \
  "$MODELS/models.json")
printf '%-28s %6s %12s %12s\n' model units "longest ms" "request ms"
for m in $models; do
  "$BUILD/nfuse" stress --context "m:$MODELS/$m.onnx:normal:0" --threads "$THREADS" --duration "$SECONDS_EACH" \
    --solo 0.5 --no-baseline --trace "$tmp/$m.json" --json "$tmp/$m.report.json" >/dev/null 2>&1 || {
    printf '%-28s %s\n' "$m" "(failed: see nfuse stress)"; continue; }
  /usr/bin/python3 - "$m" "$tmp/$m.json" "$tmp/$m.report.json" <<'PY'
import collections, json, statistics, sys
name, trace, report = sys.argv[1:]
units = collections.defaultdict(list)
for e in json.load(open(trace))["traceEvents"]:
    if e.get("cat") == "unit":
        units[int(e["name"].rpartition(" unit ")[2])].append(e["dur"] / 1000.0)
longest = max(statistics.median(v) for v in units.values())
p50 = json.load(open(report))["contexts"]["m"]["p50_ms"]
print("%-28s %6d %12.2f %12.2f" % (name, max(units), longest, p50))
PY
done
