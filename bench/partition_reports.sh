#!/usr/bin/env bash
# Writes the `nfuse partition` report (--backend auto, built-in device profile) of every zoo model
# at its bundled input shape, and of the 960x960 cases of bench/compare_fusion.sh, into
# bench/partition_reports/NAME.json, and prints each one's summary line.
# Usage: bench/partition_reports.sh [BUILD_DIR] [OUT_DIR]
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
OUT="${2:-$ROOT/bench/partition_reports}"
NFUSE="$BUILD/nfuse"
MODELS="$BUILD/models"
source "$ROOT/bench/lib.sh"
require_build_and_models
mkdir -p "$OUT"

report() {  # name, model, extra flags...
  local name="$1" model="$2"
  shift 2
  "$NFUSE" partition "$model" --report "$OUT/$name.json" "$@" > "$OUT/$name.txt"
  printf "%-28s %s\n" "$name" "$(grep -E '^[0-9]+ partitions' "$OUT/$name.txt")"
  rm "$OUT/$name.txt"
}

while read -r name file; do
  report "$name" "$MODELS/$file"
done < <(node -e '
  const m = JSON.parse(require("fs").readFileSync(process.argv[1])).models;
  for (const e of m) console.log(e.name + " " + e.file);
' "$MODELS/models.json")
report ocr_det_960 "$MODELS/ocr/ocr_det.onnx" --shape x=1x3x960x960
report ocr_rec "$MODELS/ocr/ocr_rec.onnx" --shape x=1x3x48x320
report ocr_cls "$MODELS/ocr/ocr_cls.onnx" --shape x=1x3x48x192
