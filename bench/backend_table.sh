#!/usr/bin/env bash
# The per-backend table of bench/RESULTS.md: median ms at 1 thread of
#   cpu FP32     nfuse --backend cpu on the FP32 model (layer by layer)
#   cpu INT8     nfuse --backend cpu on the QDQ model `nfuse quantize` writes (minmax, u8, 4
#                random calibration inputs: the zoo's weights are random, so this measures speed
#                only, not accuracy)
#   fusion INT8  --backend fusion on that QDQ model: integer chains (1x1 and depthwise
#                QLinearConv, QLinearAdd) run as fused groups, the rest falls back to cpu
#   auto         nfuse --backend auto on the FP32 model: the partitioner's plan
# interleaved inside one round (DESIGN.md, "Benchmark protocol"), 10 warm-ups + 50 runs, median
# over rounds of each side's median.
# Usage: bench/backend_table.sh [BUILD_DIR]   env: ROUNDS (2), WARMUP (10), RUNS (50), INT8_DIR
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
ROUNDS="${ROUNDS:-2}"
WARMUP="${WARMUP:-10}"
RUNS="${RUNS:-50}"
INT8="${INT8_DIR:-$BUILD/int8_table}"
source "$ROOT/bench/lib.sh"
require_build_and_models
mkdir -p "$INT8"

# name, model, input name, dims, input file (empty: nfuse's seeded input)
cat > "$INT8/cases.txt" <<CASES
mobilenet_v1_224 $MODELS/mobilenet_v1.onnx input 1x3x224x224 $MODELS/mobilenet_v1.input.npy
yolo_tiny_640 $MODELS/yolo_tiny.onnx images 1x3x640x640 $MODELS/yolo_tiny.input.npy
lstm_2layer $MODELS/lstm_2layer.onnx x 32x1x64 $MODELS/lstm_2layer.input.npy
espcn_x4 $MODELS/espcn_x4.onnx lr 1x1x270x480 $MODELS/espcn_x4.input.npy
lraspp_960 $MODELS/lraspp_mobilenet_v3_large.onnx input 1x3x960x960 $MODELS/lraspp_mobilenet_v3_large.input.npy
ocr_det_960 $MODELS/ocr/ocr_det.onnx x 1x3x960x960 $MODELS/demo_text_960.npy
CASES

row() { printf "%-18s %10s %10s %12s %10s\n" "$@"; }
row case "cpu FP32" "cpu INT8" "fusion INT8" "auto"
while read -r name model input dims file; do
  calib="$INT8/$name.calib"
  q="$INT8/$name.int8.onnx"
  if [[ ! -f "$q" ]]; then
    mkdir -p "$calib"
    /usr/bin/python3 - "$calib" "$dims" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(8)
dims = [int(d) for d in sys.argv[2].split("x")]
for i in range(4):
    np.save(f"{sys.argv[1]}/in_{i}.npy", rng.random(dims, dtype=np.float32))
PY
    "$NFUSE" quantize "$model" --calib "$calib" -o "$q" > "$INT8/$name.quantize.log" 2>&1 || rm -f "$q"
  fi
  : > "$INT8/f"; : > "$INT8/i"; : > "$INT8/u"; : > "$INT8/a"
  for ((r = 0; r < ROUNDS; r++)); do
    common=(--threads 1 --input "$input=$file" --warmup "$WARMUP" --runs "$RUNS" --json)
    "$NFUSE" bench "$model" --backend cpu "${common[@]}" | json_field median_ms >> "$INT8/f"
    if [[ -f "$q" ]]; then
      "$NFUSE" bench "$q" --backend cpu "${common[@]}" | json_field median_ms >> "$INT8/i"
      "$NFUSE" bench "$q" --backend fusion "${common[@]}" | json_field median_ms >> "$INT8/u"
    fi
    "$NFUSE" bench "$model" --backend auto "${common[@]}" | json_field median_ms >> "$INT8/a"
  done
  i="n/a"; u="n/a"
  [[ -s "$INT8/i" ]] && i="$(printf %.2f "$(median < "$INT8/i")")"
  [[ -s "$INT8/u" ]] && u="$(printf %.2f "$(median < "$INT8/u")")"
  row "$name" "$(printf %.2f "$(median < "$INT8/f")")" "$i" "$u" "$(printf %.2f "$(median < "$INT8/a")")"
done < "$INT8/cases.txt"
