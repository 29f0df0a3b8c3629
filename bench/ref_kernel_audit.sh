#!/usr/bin/env bash
# ref_kernel_audit.sh [BUILD_DIR] [BACKEND]: for every zoo and suite model (scripts/models.py,
# the OCR models, scripts/suite_models.py on its own inputs), `nfuse bench --profile` on
# BACKEND (cpu unless given), the share of node time spent on reference kernels
# (ref_time_share) and the op types still on them, with their share: what is left to move onto
# optimized kernels. Median of RUNS (10) after WARMUP (2): shares, not speeds, are the point.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
source "$ROOT/bench/lib.sh"
BUILD="${1:-$ROOT/build}"
BACKEND="${2:-cpu}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for m in "$MODELS"/*.onnx "$MODELS"/ocr/*.onnx; do
  [ -f "$m" ] || continue
  read -r -a shape <<< "$(zoo_shape_flags "$m")"
  "$NFUSE" bench "$m" "${shape[@]}" --backend "$BACKEND" --warmup "${WARMUP:-2}" --runs "${RUNS:-10}" --profile --json >> "$out"
done
for m in "$MODELS"/suite/*.onnx; do
  [ -f "$m" ] || continue
  "$NFUSE" bench "$m" --input "input=${m%.onnx}.input.npy" --backend "$BACKEND" --warmup "${WARMUP:-2}" \
    --runs "${RUNS:-10}" --profile --json >> "$out"
done
/usr/bin/python3 - "$out" "$BACKEND" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"backend {sys.argv[2]}\n\n| model | median ms | ref_time_share | ops on reference kernels (share of node time) |\n|---|---|---|---|")
for r in rows:
    p = r["profile"]
    total = p["ms_in_nodes"] or 1.0
    ref = [(t["op_type"], t["ms_per_run"] / total) for t in p["op_types"] if t["reference_kernel"]]
    ops = ", ".join(f"{op} {100 * s:.2f}%" for op, s in sorted(ref, key=lambda x: -x[1])) or "none"
    print(f"| {os.path.basename(r['model'])} | {r['median_ms']:.2f} | {100 * r['ref_time_share']:.2f}% | {ops} |")
PY
