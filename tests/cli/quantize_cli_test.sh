#!/usr/bin/env bash
# `nfuse quantize` end to end through the binary: the Fashion-MNIST classifier (trained by
# `make models`) quantized with a held-out set, mixed precision, CLE and bias correction; the
# QDQ file runs again through `nfuse run` on the integer kernels; the JSON and HTML reports hold
# what docs/quantization.md promises; bad arguments fail with a one-line error naming the flag.
# Usage: quantize_cli_test.sh NFUSE MODELS_DIR
set -euo pipefail
NFUSE="$1"
MODELS="$2"
PY=/usr/bin/python3
model="$MODELS/fashion_mnist_cnn.onnx"
calib="$MODELS/fashion_mnist/calib"
[[ -f "$model" && -d "$calib" ]] || { echo "FAIL: $model or $calib missing: run \`make models\`"; exit 1; }
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
# Held-out set: calibration files 400.. (the calibration uses the first 120).
mkdir -p "$tmp/eval"
for f in "$calib"/calib_4*.npy; do cp "$f" "$tmp/eval/"; done

"$NFUSE" quantize "$model" --calib "$calib" --calib-limit 120 --eval "$tmp/eval" --method entropy \
  --precision mixed --target-cosine 0.99999 --cle --bias-correction \
  -o "$tmp/q.onnx" --report "$tmp/r.json" --html "$tmp/r.html" > "$tmp/out.txt"
grep -q "output (held-out, 100 samples)" "$tmp/out.txt" || { cat "$tmp/out.txt"; echo "FAIL: no held-out line"; exit 1; }
grep -q "mixed precision:" "$tmp/out.txt" || { echo "FAIL: no mixed-precision line"; exit 1; }

"$PY" - "$tmp/r.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
def need(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)
need(j["method"] == "entropy" and j["act"] == "u8" and j["precision"] == "mixed", "options recorded")
need(j["calibration"]["samples"] == 120 and j["evaluation"]["samples"] == 100, "sample counts")
layers = j["layers"]
weighted_int = [l for l in layers if l["op"] in ("Conv", "Gemm") and l["precision"] != "float"]
need(j["cle_pairs"] == 1 and j["biases_corrected"] == len(weighted_int), "CLE pairs / corrected biases")
need(len(layers) == 7, "7 layers (4 Conv, 2 MaxPool, Gemm), got %d" % len(layers))
for l in layers:
    for k in ("calibration", "evaluation", "alone"):
        need(l[k] is not None and 0.9 < l[k]["cosine"] <= 1.0, "%s of %s" % (k, l["name"]))
    need(l["precision"] in ("int8", "float"), "precision of " + l["name"])
m = j["mixed_precision"]
need(m["target_cosine"] == 0.99999 and m["promoted_layers"] == sum(1 for l in layers if l["promoted"]), "promotions listed")
need(all(l["precision"] == "float" for l in layers if l["promoted"]), "promoted layers are float")
need(m["output_after"]["cosine"] >= m["output_before"]["cosine"], "promotion does not lower the cosine")
need("speed" in m and m["speed"]["int8_ms"] > 0, "speed cost measured")
need(j["output"]["cosine"] > 0.999, "held-out output cosine %.6f" % j["output"]["cosine"])
PY
grep -q "</table></body></html>" "$tmp/r.html" || { echo "FAIL: HTML report incomplete"; exit 1; }
grep -q "class=\"bar" "$tmp/r.html" || { echo "FAIL: HTML report has no bars"; exit 1; }

# The QDQ file loads and runs on the integer kernels.
"$NFUSE" inspect "$tmp/q.onnx" --backend cpu > "$tmp/inspect.txt" 2>&1 || { cat "$tmp/inspect.txt"; exit 1; }

# Bad arguments: a clear one-line error naming the flag, non-zero exit.
expect_error() {
  local pattern="$1"; shift
  if "$NFUSE" quantize "$model" --calib "$calib" -o "$tmp/bad.onnx" "$@" > "$tmp/bad.txt" 2>&1; then
    echo "FAIL: quantize $* succeeded"; exit 1
  fi
  grep -q -- "$pattern" "$tmp/bad.txt" || { cat "$tmp/bad.txt"; echo "FAIL: no '$pattern' in the error"; exit 1; }
}
expect_error "--precision" --precision int3
expect_error "--method" --method median
expect_error "--act" --act s16
expect_error "--target-cosine" --target-cosine 1.5
expect_error "--weights" --weights int2
if "$NFUSE" quantize "$model" --calib "$tmp/nothing_here" -o "$tmp/bad.onnx" > "$tmp/bad.txt" 2>&1; then
  echo "FAIL: a missing calibration folder was accepted"; exit 1
fi
grep -q "nothing_here" "$tmp/bad.txt" || { cat "$tmp/bad.txt"; echo "FAIL: the error does not name the folder"; exit 1; }
echo "quantize CLI: ok"
