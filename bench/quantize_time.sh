#!/usr/bin/env bash
# Wall time of `nfuse quantize` on an image folder: mobilenet_v2 calibrated on the 500 PNG crops
# of build/models/imagenet_like_500 (scripts/make_calib_images.py) at 224x224 with the ImageNet
# mean/std. Target: under 2 minutes. Prints the total seconds and where they went:
#   decode    model load + reading, decoding, resizing and normalising the 500 PNGs, timed by
#             a second run whose --eval folder does not exist (it stops right after the
#             calibration folder is loaded)
#   calibrate the float runs with observers and the range search (the tool's "calibrated in"
#             time minus decode)
#   report    the rest: per-layer sensitivity, export, per-layer evaluation over the images
#
# Usage: bench/quantize_time.sh [BUILD_DIR]   env: THREADS (default 1), METHOD (default minmax),
#        LIMIT (calibration images, default 500), PERF=1 (record with perf when installed)
# Default 1 thread: at --threads 2 on a 2-core machine the run took 581 s wall / 538 s user vs
# 136 s / 75 s at 1 thread (2026-11-29, loaded machine): perf put 95% of its samples in
# libpthreadpool's spin-wait, the calibration and evaluation loops being mostly serial.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
MODEL="$MODELS/mobilenet_v2.onnx"
IMAGES="$MODELS/imagenet_like_500"
THREADS="${THREADS:-1}"
METHOD="${METHOD:-minmax}"
LIMIT="${LIMIT:-500}"
for f in "$NFUSE" "$MODEL" "$IMAGES"; do
  [ -e "$f" ] || { echo "quantize_time: $f is missing (make build models)" >&2; exit 1; }
done
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT

args=("$MODEL" --calib "$IMAGES" --calib-limit "$LIMIT" --size 224 --mean 123.675,116.28,103.53
      --std 58.395,57.12,57.375 --method "$METHOD" --threads "$THREADS" -o "$OUT/q.onnx"
      --report "$OUT/r.json")
run=("$NFUSE" quantize "${args[@]}")
if [ "${PERF:-0}" = 1 ] && command -v perf >/dev/null 2>&1; then
  run=(perf record -g -o "$OUT/perf.data" -- "${run[@]}")
fi

now() { date +%s.%N; }

t0=$(now)
"${run[@]}" > "$OUT/log.txt" 2>&1 || { cat "$OUT/log.txt" >&2; exit 1; }
total=$(echo "$(now) - $t0" | bc)

# Decoding alone: the same command with a missing --eval folder stops right after --calib loads.
t0=$(now)
if "$NFUSE" quantize "${args[@]}" --eval "$OUT/no_such_folder" > "$OUT/decode.txt" 2>&1; then
  echo "quantize_time: the decode-only run did not stop at the missing --eval folder" >&2; exit 1
fi
decode=$(echo "$(now) - $t0" | bc)
calibrated=$(sed -n 's/.*calibrated on [0-9]* samples in \([0-9.]*\) s.*/\1/p' "$OUT/log.txt")

printf 'nfuse quantize mobilenet_v2, %s images 224x224 (%s, %s threads): %.1f s\n' "$LIMIT" "$METHOD" "$THREADS" "$total"
printf '  decode    %6.1f s  (model load + PNG decode/resize/normalise)\n' "$decode"
if [ -n "$calibrated" ]; then
  printf '  calibrate %6.1f s  (float runs with observers, range search)\n' "$(echo "$calibrated - $decode" | bc)"
  printf '  report    %6.1f s  (sensitivity, export, per-layer evaluation)\n' "$(echo "$total - $calibrated" | bc)"
fi
grep -E "^output" "$OUT/log.txt" || true
if [ -f "$OUT/perf.data" ]; then
  echo "perf (self time, whole run):"
  perf report -i "$OUT/perf.data" --no-children --sort dso,symbol --stdio -g none 2>/dev/null |
    grep -E "^ +[0-9]" | head -15 | sed -E 's/ +$//; s/  +/ /g'
fi
