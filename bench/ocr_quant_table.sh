#!/usr/bin/env bash
# The OCR quantization table (issue "Quantization that keeps a real detector's accuracy"): the
# PaddleOCR detector at 960x960, calibrated on the 20 real photos of $MODELS/ocr_calib and judged
# on the 5 held-out ones of $MODELS/ocr_eval (scripts/make_calib_images.py; Debian packages'
# photos), for each configuration:
#   quantize   `nfuse quantize` with the configuration's flags (its held-out cosine, worst photo
#              and MAC shares per precision, from its own report)
#   accuracy   every held-out photo (PIL bilinear resize, ImageNet mean / std) run by nfuse on the
#              quantized model against the FP32 model run by ONNX Runtime: cosine of the
#              probability map and IoU of the text map (map > 0.3, as DB post-processing cuts it)
#   latency    `nfuse bench`, cpu backend, median of RUNS after WARMUP, THREADS threads, FP32 and
#              every quantized model in turn, ROUNDS times; the median over rounds
# Usage: bench/ocr_quant_table.sh [BUILD_DIR] [CONFIG,...]
#   CONFIG: weight-only, w8a16, int8, int8-noeq, int8-minmax, int8-percentile, int8-adaptive, mixed,
#           mixed-adaptive (default: all)
#   env: ORT_DIR (.cache/ort), THREADS (1), WARMUP (10), RUNS (50), ROUNDS (1),
#        OUT (where models, logs and reports go; default BUILD_DIR/ocr_quant)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
ONLY="${2:-weight-only,w8a16,int8,int8-noeq,int8-minmax,int8-percentile,int8-adaptive,mixed,mixed-adaptive}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
ORT_DIR="${ORT_DIR:-$ROOT/.cache/ort}"
THREADS="${THREADS:-1}"
WARMUP="${WARMUP:-10}"
RUNS="${RUNS:-50}"
ROUNDS="${ROUNDS:-1}"
OUT="${OUT:-$BUILD/ocr_quant}"
PY=/usr/bin/python3
source "$ROOT/bench/lib.sh"
DET="$MODELS/ocr/ocr_det.onnx"
[[ -x "$NFUSE" ]] || { echo "no $NFUSE: build first" >&2; exit 1; }
for p in "$DET" "$MODELS/ocr_calib" "$MODELS/ocr_eval"; do
  [[ -e "$p" ]] || { echo "no $p: run \`make models\`" >&2; exit 1; }
done
ensure_ort
mkdir -p "$OUT/in" "$OUT/out"
PRE=(--mean 123.675,116.28,103.53 --std 58.395,57.12,57.375)

flags() {
  case "$1" in
    weight-only) echo "--weight-only" ;;
    w8a16) echo "--precision int16" ;;
    int8) echo "" ;;
    int8-noeq) echo "--equalize none" ;;
    int8-percentile) echo "--method percentile" ;;
    int8-minmax) echo "--method minmax" ;;
    int8-adaptive) echo "--weight-rounding adaptive" ;;
    mixed) echo "--precision mixed" ;;
    mixed-adaptive) echo "--precision mixed --weight-rounding adaptive" ;;
    *) echo "unknown configuration $1" >&2; exit 1 ;;
  esac
}

# Held-out photos as the detector's input, and the FP32 maps from ONNX Runtime.
"$PY" - "$MODELS/ocr_eval" "$OUT/in" <<'PY'
import os, sys
import numpy as np
from PIL import Image
src, dst = sys.argv[1], sys.argv[2]
mean = np.array([123.675, 116.28, 103.53], np.float32)
std = np.array([58.395, 57.12, 57.375], np.float32)
for f in sorted(os.listdir(src)):
    im = Image.open(os.path.join(src, f)).convert("RGB").resize((960, 960), Image.BILINEAR)
    x = ((np.asarray(im, np.float32) - mean) / std).transpose(2, 0, 1)[None]
    np.save(os.path.join(dst, os.path.splitext(f)[0] + ".npy"), np.ascontiguousarray(x))
PY
photos=$(cd "$OUT/in" && ls *.npy | sed 's/\.npy$//')
for p in $photos; do
  node "$ROOT/scripts/ort_run.js" "$DET" "$OUT/out/fp32.$p" "x=$OUT/in/$p.npy" > /dev/null
done

IFS=',' read -r -a configs <<< "$ONLY"
for c in "${configs[@]}"; do
  # shellcheck disable=SC2046
  "$NFUSE" quantize "$DET" --calib "$MODELS/ocr_calib" --eval "$MODELS/ocr_eval" "${PRE[@]}" $(flags "$c") \
    -o "$OUT/$c.onnx" --report "$OUT/$c.json" > "$OUT/$c.log" 2>&1 || { cat "$OUT/$c.log"; exit 1; }
  for p in $photos; do
    "$NFUSE" run "$OUT/$c.onnx" --backend cpu --input "x=$OUT/in/$p.npy" --output-dir "$OUT/out/$c.$p" > /dev/null
  done
done

bench_ms() {
  "$NFUSE" bench "$1" --backend cpu --shape x=1x3x960x960 --threads "$THREADS" --warmup "$WARMUP" --runs "$RUNS" |
    sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'
}
: > "$OUT/latency.txt"
for ((r = 0; r < ROUNDS; ++r)); do
  echo "fp32 $(bench_ms "$DET")" >> "$OUT/latency.txt"
  for c in "${configs[@]}"; do echo "$c $(bench_ms "$OUT/$c.onnx")" >> "$OUT/latency.txt"; done
done

"$PY" - "$OUT" "$ONLY" $photos <<'PY'
import json, os, statistics, sys
import numpy as np
out, configs, photos = sys.argv[1], sys.argv[2].split(","), sys.argv[3:]
lat = {}
for line in open(os.path.join(out, "latency.txt")):
    k, v = line.split()
    lat.setdefault(k, []).append(float(v))
ms = {k: statistics.median(v) for k, v in lat.items()}
def load(d):
    return np.load(os.path.join(d, sorted(os.listdir(d))[0])).astype(np.float64).ravel()
print("| configuration | MACs int8 / int16 / float % | held-out cos (nfuse report) | worst photo cos | worst IoU | mean IoU | ms | x FP32 |")
print("|---|---|---|---|---|---|---|---|")
print("| FP32 (ORT reference) | - | 1 | 1 | 1 | 1 | %.1f | 1.00 |" % ms["fp32"])
for c in configs:
    j = json.load(open(os.path.join(out, c + ".json")))
    m = j.get("macs") or {}
    total = m.get("total") or 1
    share = "%.2f / %.2f / %.2f" % tuple(100.0 * m.get(k, 0) / total for k in ("int8", "int16", "float")) if m else "-"
    cos, iou = [], []
    for p in photos:
        r = load(os.path.join(out, "out", "fp32." + p))
        q = load(os.path.join(out, "out", c + "." + p))
        cos.append(float(r @ q / np.sqrt((r @ r) * (q @ q))))
        a, b = r > 0.3, q > 0.3
        union = np.logical_or(a, b).sum()
        iou.append(float(np.logical_and(a, b).sum() / union) if union else 1.0)
    print("| %s | %s | %.6f | %.6f | %.4f | %.4f | %.1f | %.2f |" % (
        c, share, j["output"]["cosine"], min(cos), min(iou), sum(iou) / len(iou), ms[c], ms[c] / ms["fp32"]))
PY
