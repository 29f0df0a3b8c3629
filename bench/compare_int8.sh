#!/usr/bin/env bash
# INT8 speed table: nfuse and ONNX Runtime (onnxruntime-node 1.30.0, default CPU provider), each
# on the FP32 zoo model and on the same QDQ INT8 model written by `nfuse quantize` (calibrated on
# the real images of $MODELS/calib224, scripts/make_calib224.py). One QDQ file serves both
# engines: nfuse fuses its QDQ regions into QLinearConv / QLinearMatMul (cpu backend), ORT into
# its own QLinear kernels.
# Protocol as bench/compare_ort.sh (DESIGN.md, "Benchmark protocol"): interleaved inside each
# round (nfuse FP32, nfuse INT8, ORT FP32, ORT INT8), 10 warm-ups + 50 timed runs each; the table
# shows the median over rounds of each side's median ms, then
#   nfuse x     nfuse FP32 / nfuse INT8 (INT8 speedup on nfuse; > 1: INT8 faster)
#   ORT x       ORT FP32 / ORT INT8
#   n/O int8    nfuse INT8 / ORT INT8 (< 1: nfuse faster)
#   int8 |diff| max |nfuse INT8 - ORT INT8| over the outputs (the zoo input; nfuse's output from
#               `nfuse run --output-dir`). The two integer paths round differently from each
#               other, so expect up to about one quantization step of the last quantized tensor,
#               propagated through the float tail (the classifier Gemm stays float).
#   fp32 |diff| the same between the FP32 runs, for scale.
#
# Usage: bench/compare_int8.sh [BUILD_DIR] [MODEL,...]
#   MODEL default: mobilenet_v2,resnet50,mobilenet_v1,resnet18
#   env: ORT_DIR (default .cache/ort; installed as compare_ort.sh does), ROUNDS (2), THREADS ("1"),
#        WARMUP (10), RUNS (50), METHOD (nfuse quantize --method, minmax), CALIB (calib folder,
#        default $MODELS/calib224), INT8_DIR (where the QDQ models and quantize logs / reports go,
#        default BUILD_DIR/int8; rewritten on every run)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
ONLY="${2:-mobilenet_v2,resnet50,mobilenet_v1,resnet18}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
ORT_DIR="${ORT_DIR:-$ROOT/.cache/ort}"
ROUNDS="${ROUNDS:-2}"
THREADS="${THREADS:-1}"
WARMUP="${WARMUP:-10}"
RUNS="${RUNS:-50}"
METHOD="${METHOD:-minmax}"
CALIB="${CALIB:-$MODELS/calib224}"

source "$ROOT/bench/lib.sh"
require_build_and_models
[[ -d "$CALIB" ]] || { echo "no $CALIB: run \`make models\` (scripts/make_calib224.py)" >&2; exit 1; }
ensure_ort
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.2f", a/b}'; }
fmt_diff() { awk -v d="$1" 'BEGIN{if (d + 0 == d) printf "%.3g", d; else printf "%s", d}'; }

TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
INT8="${INT8_DIR:-$BUILD/int8}"
mkdir -p "$INT8"
node -e '
  const m = JSON.parse(require("fs").readFileSync(process.argv[1])).models;
  for (const e of m) console.log([e.name, e.file, e.inputs[0].name, e.inputs[0].file].join(" "));
' "$MODELS/models.json" > "$TMP/models.txt"

# Quantize first, outside the timed part.
while read -r name file input_name input_file; do
  [[ ",$ONLY," == *",$name,"* ]] || continue
  q="$INT8/$name.int8.onnx"
  rm -f "$q"
  if ! "$NFUSE" quantize "$MODELS/$file" --calib "$CALIB" --method "$METHOD" -o "$q" --report "$INT8/$name.report.json" \
       > "$INT8/$name.quantize.log" 2>&1; then
    echo "# $name: nfuse quantize failed, skipped: $(tail -1 "$INT8/$name.quantize.log")"
    rm -f "$q"
    continue
  fi
  # What the cpu backend makes of it: integer convs, and nodes left on reference kernels.
  "$NFUSE" inspect "$q" --backend cpu > "$TMP/inspect.txt" 2>&1 || true
  qconv="$(grep -o 'QLinearConv *[0-9]*' "$TMP/inspect.txt" | head -1 || true)"
  refs="$(sed -n 's/^backend .*, \([0-9]*\) on reference kernels.*/\1/p' "$TMP/inspect.txt")"
  echo "# $name: $(grep -m1 '^output' "$INT8/$name.quantize.log" || true) [${qconv:-no QLinearConv}, ${refs:-?} nodes on reference kernels]"
done < "$TMP/models.txt"

row() { printf "%-14s %3s %10s %10s %10s %10s %7s %7s %8s %11s %11s\n" "$@"; }
row model thr "nfuse f32" "nfuse i8" "ORT f32" "ORT i8" "nfuse x" "ORT x" "n/O i8" "i8 |diff|" "f32 |diff|"
while read -r name file input_name input_file; do
  [[ ",$ONLY," == *",$name,"* ]] || continue
  q="$INT8/$name.int8.onnx"
  [[ -f "$q" ]] || continue
  for t in $THREADS; do
    ok=1
    for v in f32 i8; do
      m="$MODELS/$file"; [[ $v == i8 ]] && m="$q"
      mkdir -p "$TMP/$name.$t.$v"
      if ! "$NFUSE" run "$m" --backend cpu --threads "$t" --input "$input_name=$MODELS/$input_file" \
           --output-dir "$TMP/$name.$t.$v" > "$TMP/run.log" 2>&1; then
        echo "# $name: nfuse run failed on $(basename "$m"), skipped: $(tail -1 "$TMP/run.log")"
        ok=0
      fi
      : > "$TMP/n$v"; : > "$TMP/o$v"
    done
    [[ $ok == 1 ]] || continue
    for ((r = 0; r < ROUNDS; r++)); do
      for v in f32 i8; do
        m="$MODELS/$file"; [[ $v == i8 ]] && m="$q"
        "$NFUSE" bench "$m" --backend cpu --threads "$t" --input "$input_name=$MODELS/$input_file" \
          --warmup "$WARMUP" --runs "$RUNS" --json | json_field median_ms >> "$TMP/n$v"
      done
      for v in f32 i8; do
        m="$MODELS/$file"; [[ $v == i8 ]] && m="$q"
        res="$(node "$ROOT/bench/ort_bench.js" "$m" "$input_name" "$MODELS/$input_file" "$t" "$WARMUP" "$RUNS" \
          "$TMP/$name.$t.$v")"
        echo "$res" | json_field median_ms >> "$TMP/o$v"
        echo "$res" | json_field max_abs_diff > "$TMP/d$v"
      done
    done
    nf="$(median < "$TMP/nf32")"; ni="$(median < "$TMP/ni8")"; of="$(median < "$TMP/of32")"; oi="$(median < "$TMP/oi8")"
    row "$name" "$t" "$(printf %.3f "$nf")" "$(printf %.3f "$ni")" "$(printf %.3f "$of")" "$(printf %.3f "$oi")" \
      "$(ratio "$nf" "$ni")" "$(ratio "$of" "$oi")" "$(ratio "$ni" "$oi")" "$(fmt_diff "$(cat "$TMP/di8")")" "$(fmt_diff "$(cat "$TMP/df32")")"
  done
done < "$TMP/models.txt"
