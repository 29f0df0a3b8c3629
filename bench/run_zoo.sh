#!/usr/bin/env bash
# run_zoo.sh NFUSE MODELS_DIR [BACKEND] [THREADS]: `nfuse bench` on every zoo model, one JSON
# line each (median of 50 runs after 10 warm-ups), then a table. Peer comparisons against ONNX
# Runtime come with the `cpu` backend (bench/compare_ort.sh).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
nfuse=$1 models=$2 backend=${3:-ref} threads=${4:-1}
runs=${RUNS:-50} warmup=${WARMUP:-10}
out=$(mktemp)
echo "machine: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores; $(date -u +%Y-%m-%d)"
for m in "$models"/*.onnx "$models"/ocr/*.onnx; do
  [ -f "$m" ] || continue
  read -r -a shape <<< "$(zoo_shape_flags "$m")"
  "$nfuse" bench "$m" "${shape[@]}" --backend "$backend" --threads "$threads" --warmup "$warmup" --runs "$runs" --json | tee -a "$out"
done
/usr/bin/python3 - "$out" <<'PY'
import json, os, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
print(f"\n| model | backend | threads | min ms | median ms | p90 ms | peak RSS MiB |\n|---|---|---|---|---|---|---|")
for r in rows:
    print(f"| {os.path.basename(r['model'])} | {r['backend']} | {r['threads']} | {r['min_ms']:.2f} | {r['median_ms']:.2f} | {r['p90_ms']:.2f} | {r['peak_rss_mb']:.0f} |")
PY
rm -f "$out"
