#!/usr/bin/env bash
# The zoo's CNNs as ONNX Runtime's quantize_dynamic writes them (DynamicQuantizeLinear ->
# ConvInteger -> Cast -> Mul [-> Add], scripts/suite_models.py's quantize_dynamic, u8 and s8
# weights) against their FP32 originals: `nfuse bench --backend cpu` on each, the ratio
# FP32 / dynamic (> 1: the dynamic model is faster; issue 16's target is >= 1.5), and ONNX
# Runtime on the same dynamic file. Each nfuse time is the median of ROUNDS rounds (FP32 and
# dynamic interleaved, A B A B), each the median of 50 runs after 10 warm-ups.
# Usage: bench/zoo_dynamic_quant.sh [BUILD_DIR] [MODEL,...]   env: THREADS (default "1 2"), ROUNDS (3), ORT_DIR
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
ONLY="${2:-resnet18,mobilenet_v2,mobilenet_v1,resnet50}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
ORT_DIR="${ORT_DIR:-$ROOT/.cache/ort}"
THREADS="${THREADS:-1 2}"
ROUNDS="${ROUNDS:-3}"
source "$ROOT/bench/lib.sh"
require_build_and_models
ensure_ort
OUT="$MODELS/dynamic_quant"
mkdir -p "$OUT"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

row() { printf "%-16s %-7s %7s %10s %10s %12s %10s\n" "$@"; }
row model weights threads "FP32 ms" "dyn ms" "FP32/dyn" "ORT dyn ms"
for name in ${ONLY//,/ }; do
  src="$MODELS/$name.onnx"
  [[ -f "$src" ]] || { echo "no $src" >&2; continue; }
  NFUSE_SCRIPTS="$ROOT/scripts" /usr/bin/python3 - "$src" "$OUT" "$name" "$TMP/$name.input.npy" <<'PY'
import os, sys
import numpy as np, onnx
sys.path.insert(0, os.environ["NFUSE_SCRIPTS"])
from suite_models import quantize_dynamic
src, out, name, input_path = sys.argv[1:5]
m = onnx.load(src)
for signed in (False, True):
    onnx.save(quantize_dynamic(m, signed), os.path.join(out, f"{name}.dynq_{'s8' if signed else 'u8'}.onnx"))
dims = [d.dim_value for d in m.graph.input[0].type.tensor_type.shape.dim]
np.save(input_path, np.random.default_rng(0).standard_normal(dims).astype(np.float32))
PY
  input_name="$(/usr/bin/python3 -c 'import onnx,sys; print(onnx.load(sys.argv[1]).graph.input[0].name)' "$src")"
  for w in u8 s8; do
    dyn="$OUT/$name.dynq_$w.onnx"
    for t in $THREADS; do
      bench() { "$NFUSE" bench "$1" --backend cpu --threads "$t" --input "$input_name=$TMP/$name.input.npy" \
        --warmup 10 --runs 50 --json | json_field median_ms; }
      : > "$TMP/a"; : > "$TMP/b"
      for ((r = 0; r < ROUNDS; r++)); do bench "$src" >> "$TMP/a"; bench "$dyn" >> "$TMP/b"; done
      a="$(median < "$TMP/a")"; b="$(median < "$TMP/b")"
      mkdir -p "$TMP/out"
      "$NFUSE" run "$dyn" --backend cpu --threads "$t" --input "$input_name=$TMP/$name.input.npy" \
        --output-dir "$TMP/out" >/dev/null
      o="$(node "$ROOT/bench/ort_bench.js" "$dyn" "$input_name" "$TMP/$name.input.npy" "$t" 10 50 "$TMP/out" |
        json_field median_ms)"
      row "$name" "$w" "$t" "$(printf %.3f "$a")" "$(printf %.3f "$b")" \
        "$(awk -v a="$a" -v b="$b" 'BEGIN{printf "%.2fx", a/b}')" "$(printf %.3f "$o")"
    done
  done
done
