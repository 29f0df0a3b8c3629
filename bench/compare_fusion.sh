#!/usr/bin/env bash
# Depth-first fused execution against layer by layer, and both against ONNX Runtime, at 1
# thread (THREADS to change it, for every engine alike), interleaved inside this one script
# (DESIGN.md, "Benchmark protocol"): each round runs
#   layer    nfuse --backend cpu            every op through the arena, one after another
#   auto     nfuse --backend auto           the partitioner's plan: fusion where it pays
#   fused    nfuse --backend auto --pin Conv=fusion
#                                           every Conv forced onto the fusion backend (its plan
#                                           fuses every chain, paying or not)
#   ORT      onnxruntime-node 1.30.0 (default CPU provider)
# 10 warm-ups + 50 timed runs each; the table shows the median over rounds of each side's
# median, the ratios, and the arena traffic per inference (nfuse bench --traffic: exact bytes
# read and written by every step, MiB) of each nfuse plan and of the same ops layer by layer;
# under each case, the layer/auto ratio of every round and their median.
#
# Usage: bench/compare_fusion.sh [BUILD_DIR]
#   env: ORT_DIR (default .cache/ort), ROUNDS (default 2), WARMUP (10), RUNS (50), THREADS (1)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
ORT_DIR="${ORT_DIR:-$ROOT/.cache/ort}"
ROUNDS="${ROUNDS:-2}"
WARMUP="${WARMUP:-10}"
RUNS="${RUNS:-50}"
THREADS="${THREADS:-1}"

source "$ROOT/bench/lib.sh"
require_build_and_models
ensure_ort

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# 960x960 inputs: the OCR demo page and a deterministic image-like tensor for lraspp.
/usr/bin/python3 - "$TMP/x960.npy" <<'PY'
import sys, numpy as np
rng = np.random.default_rng(960)
np.save(sys.argv[1], rng.random((1, 3, 960, 960), dtype=np.float32))
PY

# name, model file, input name, input file
cat > "$TMP/cases.txt" <<CASES
mobilenet_v2_224 $MODELS/mobilenet_v2.onnx input $MODELS/mobilenet_v2.input.npy
lraspp_960 $MODELS/lraspp_mobilenet_v3_large.onnx input $TMP/x960.npy
ocr_det_960 $MODELS/ocr/ocr_det.onnx x $MODELS/demo_text_960.npy
CASES

mib() { awk -v b="$1" 'BEGIN{printf "%.1f", b / 1048576}'; }
row() { printf "%-18s %9s %9s %9s %9s %9s %9s %9s %10s %10s %10s\n" "$@"; }
row case "layer ms" "auto ms" "fused ms" "ORT ms" "layer/au" "layer/fu" "ORT/auto" "layer MiB" "auto MiB" "fused MiB"
while read -r name file input_name input_file; do
  : > "$TMP/l"; : > "$TMP/a"; : > "$TMP/f"; : > "$TMP/o"
  for ((r = 0; r < ROUNDS; r++)); do
    common=("$file" --threads "$THREADS" --input "$input_name=$input_file" --warmup "$WARMUP" --runs "$RUNS" --json)
    res_l="$("$NFUSE" bench "${common[@]}" --backend cpu)"
    echo "$res_l" | json_field median_ms >> "$TMP/l"
    res_a="$("$NFUSE" bench "${common[@]}" --backend auto)"
    echo "$res_a" | json_field median_ms >> "$TMP/a"
    res_f="$("$NFUSE" bench "${common[@]}" --backend auto --pin Conv=fusion)"
    echo "$res_f" | json_field median_ms >> "$TMP/f"
    node "$ROOT/bench/ort_bench.js" "$file" "$input_name" "$input_file" "$THREADS" "$WARMUP" "$RUNS" "" \
      | json_field median_ms >> "$TMP/o"
  done
  l="$(median < "$TMP/l")"; a="$(median < "$TMP/a")"; f="$(median < "$TMP/f")"; o="$(median < "$TMP/o")"
  ratio() { awk -v x="$1" -v y="$2" 'BEGIN{printf "%.2f", x / y}'; }
  row "$name" "$(printf %.2f "$l")" "$(printf %.2f "$a")" "$(printf %.2f "$f")" "$(printf %.2f "$o")" \
    "$(ratio "$l" "$a")" "$(ratio "$l" "$f")" "$(ratio "$o" "$a")" \
    "$(mib "$(echo "$res_l" | json_field arena_bytes_layerwise)")" \
    "$(mib "$(echo "$res_a" | json_field arena_bytes_fused)")" "$(mib "$(echo "$res_f" | json_field arena_bytes_fused)")"
  # The ratio inside each round (layer and auto ran back to back) cancels the machine's drift
  # between rounds, which the medians of each side above do not.
  paste "$TMP/l" "$TMP/a" | awk '{print $1 / $2}' > "$TMP/r"
  printf "%-18s layer/auto per round: %s (median %.2f)\n" "" "$(awk '{printf "%.2f ", $1}' "$TMP/r")" "$(median < "$TMP/r")"
done < "$TMP/cases.txt"
