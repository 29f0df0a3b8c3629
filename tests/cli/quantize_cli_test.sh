#!/usr/bin/env bash
# `nfuse quantize` end to end through the binary: the Fashion-MNIST classifier (trained by
# `make models`) quantized with a held-out set, mixed precision, CLE and bias correction; the
# QDQ file runs again through `nfuse run` on the integer kernels; the JSON and HTML reports hold
# what docs/quantization.md promises; the weight-only int8 floor in every report, W8A16 within
# 0.002 of it, and `--weight-only` (int8 weights, float activations) reaching it; the same classifier with a fixed batch (100, and 1 fed from
# files of several rows) through calibration, sensitivity, mixed precision and evaluation, and
# samples that do not divide into the fixed batch refused naming the counts; --weight-rounding adaptive
# recorded and above nearest rounding's SNR; bad arguments fail
# with a one-line error naming the flag.
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
grep -q "mixed precision (--promote auto):" "$tmp/out.txt" || { echo "FAIL: no mixed-precision line"; exit 1; }

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
# Activation equalization is on by default for 8-bit activations; this Conv-BN-ReLU net has no
# depthwise or element-wise region to rescale into.
need(j["activation_equalization"] == {"pairs": 0, "channels": 0}, "activation equalization recorded")
need(len(layers) == 7, "7 layers (4 Conv, 2 MaxPool, Gemm), got %d" % len(layers))
for l in layers:
    for k in ("calibration", "evaluation", "alone"):
        need(l[k] is not None and 0.9 < l[k]["cosine"] <= 1.0, "%s of %s" % (k, l["name"]))
    need(l["precision"] in ("int8", "int16", "float"), "precision of " + l["name"])
    need(l["worst_sample"] is not None and l["worst_sample"]["cosine"] <= 1.0, "worst-sample error of " + l["name"])
    need(l["alone_int16"] is not None, "int16 sensitivity of " + l["name"])
    need(l["macs"] > 0 if l["op"] in ("Conv", "Gemm") else l["macs"] == 0, "MACs of " + l["name"])
macs = j["macs"]
need(macs["total"] == macs["int8"] + macs["int16"] + macs["float"] == sum(l["macs"] for l in layers),
     "MAC shares add up: %s" % macs)
# The shares are what the kernels ran: an int16 Conv runs QLinearConv16; a QDQ Gemm (the
# classifier, whose output is the graph's) has no integer kernel and counts as float whatever
# its selection says.
need(macs["int16"] == sum(l["macs"] for l in layers if l["precision"] == "int16" and l["op"] == "Conv"),
     "int16 MACs: %s" % macs)
need(macs["float"] >= sum(l["macs"] for l in layers if l["op"] == "Gemm"), "the Gemm's MACs count as float")
for l in layers:  # each weighted layer says what its kernel ran in
    if l["op"] == "Gemm":
        need(l["ran"] == "float", "the Gemm ran in float: %s" % l["ran"])
    elif l["op"] == "Conv":
        need(l["ran"] == l["precision"], "%s ran %s, selected %s" % (l["name"], l["ran"], l["precision"]))
    else:
        need(l["ran"] is None, "a layer without MACs has no kernel precision: " + l["name"])
m = j["mixed_precision"]
need(m["target_cosine"] == 0.99999 and m["promoted_layers"] == sum(1 for l in layers if l["promoted"]), "promotions listed")
need(all(l["precision"] == l["promoted"]["to"] for l in layers if l["promoted"]), "promoted layers at their rung")
need(len(m["promotions"]) == m["promoted_layers"], "the promotion list")
need(isinstance(m["demotions"], int) and m["demotions"] >= 0 and all("writes_input_of" in p for p in m["promotions"]),
     "demotions and writers recorded")
need(m["output_after"]["cosine"] >= m["output_before"]["cosine"], "promotion does not lower the cosine")
need("speed" in m and m["speed"]["int8_ms"] > 0, "speed cost measured")
need(j["output"]["cosine"] > 0.999, "held-out output cosine %.6f" % j["output"]["cosine"])
f = j["weight_only_floor"]
need(f is not None and j["output"]["cosine"] <= f["cosine"] + 1e-4 and f["worst_sample_cosine"] <= f["cosine"],
     "the weight-only floor is reported and bounds the output")
need(j["output"]["worst_sample_cosine"] <= j["output"]["cosine"], "the worst sample is at most the average")
# 'alone' is measured on calibration samples (the ones the mixed search scores), and says so.
sens = j["sensitivity"]
need(sens is not None and sens["samples"] >= 3 and
     sens["set"] == "the %d calibration samples where the int8 model is worst" % sens["samples"],
     "the sensitivity set named: %s" % sens)
PY
set_text="$("$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))["sensitivity"]["set"])' "$tmp/r.json")"
grep -qF "'alone': output cosine with only that layer quantized, on $set_text)" "$tmp/out.txt" ||
  { grep "per layer" "$tmp/out.txt"; echo "FAIL: the summary does not name the sensitivity samples"; exit 1; }
grep -qF "<p id=\"alone-set\">" "$tmp/r.html" && grep -qF "on $set_text (not the held-out set)" "$tmp/r.html" ||
  { echo "FAIL: the HTML report does not name the sensitivity samples"; exit 1; }

# W8A16 everywhere against the floor of its 8-bit weights; --weight-only is that floor.
"$NFUSE" quantize "$model" --calib "$calib" --calib-limit 120 --eval "$tmp/eval" --precision int16 \
  -o "$tmp/w8a16.onnx" --report "$tmp/w8a16.json" > /dev/null
"$NFUSE" quantize "$model" --calib "$calib" --calib-limit 120 --eval "$tmp/eval" --weight-only \
  -o "$tmp/w8.onnx" --report "$tmp/w8.json" > /dev/null
"$NFUSE" quantize "$model" --calib "$calib" --calib-limit 120 --eval "$tmp/eval" --weight-only \
  --weight-rounding adaptive -o "$tmp/w8a.onnx" --report "$tmp/w8a.json" > "$tmp/w8a.txt"
grep -q "adaptive weight rounding: 5 of 5 weighted layers" "$tmp/w8a.txt" ||
  { cat "$tmp/w8a.txt"; echo "FAIL: the adaptive rounding line"; exit 1; }
"$PY" - "$tmp/w8a16.json" "$tmp/w8.json" "$tmp/w8a.json" <<'PY'
import json, sys
a16, w8, w8a = (json.load(open(p)) for p in sys.argv[1:])
def need(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)
floor = a16["weight_only_floor"]
need(a16["output"]["worst_sample_cosine"] >= floor["worst_sample_cosine"] - 0.002,
     "W8A16 worst sample %.6f vs the floor's %.6f" % (a16["output"]["worst_sample_cosine"], floor["worst_sample_cosine"]))
need(w8["precision"] == "weight-only int8", "weight-only recorded")
need(all(l["precision"] in ("w8 (float activations)", "float") for l in w8["layers"]), "weight-only layers")
need(abs(w8["output"]["cosine"] - w8["weight_only_floor"]["cosine"]) < 1e-9, "--weight-only is the floor")
need(w8["output"]["cosine"] >= a16["output"]["cosine"] - 1e-4, "float activations lose nothing over W8A16")
need(w8a["weight_rounding"] == "adaptive" and w8a["weights_rounded_adaptively"] == 5 and
     w8["weight_rounding"] == "nearest" and w8["weights_rounded_adaptively"] == 0, "weight rounding recorded")
# The rounding minimises each layer's output error: the whole output gains SNR (measured: 43.95 -> 48.75 dB).
need(w8a["output"]["snr_db"] >= w8["output"]["snr_db"] + 1.0,
     "adaptive rounding SNR %.2f dB vs nearest %.2f dB" % (w8a["output"]["snr_db"], w8["output"]["snr_db"]))
PY
grep -q "</body></html>" "$tmp/r.html" || { echo "FAIL: HTML report incomplete"; exit 1; }
grep -q "class=\"bar" "$tmp/r.html" || { echo "FAIL: HTML report has no bars"; exit 1; }

# The QDQ file loads and runs on the integer kernels.
"$NFUSE" inspect "$tmp/q.onnx" --backend cpu > "$tmp/inspect.txt" 2>&1 || { cat "$tmp/inspect.txt"; exit 1; }

# Fixed batch dimensions (the model exported with batch 100, or 1): every step of the workflow runs
# whole batches. Calibration from 1-row files (grouped into batches of 100), held out from
# 100-row files, mixed precision to int16 (sensitivity, promotion, timing); batch 1 from 4-row files.
"$PY" - "$model" "$MODELS/fashion_mnist/test_images.npy" "$tmp" <<'PY'
import os, sys
import numpy as np
import onnx
model, images, tmp = sys.argv[1:]
for batch in (100, 1):
    m = onnx.load(model)
    for v in list(m.graph.input) + list(m.graph.output):
        d = v.type.tensor_type.shape.dim[0]
        d.Clear()
        d.dim_value = batch
    del m.graph.value_info[:]
    onnx.save(m, os.path.join(tmp, "b%d.onnx" % batch))
x = np.load(images)
for name, start, files, rows in (("eval100", 5000, 2, 100), ("odd", 6000, 3, 50), ("rows4", 7000, 10, 4)):
    os.makedirs(os.path.join(tmp, name))
    for i in range(files):
        np.save(os.path.join(tmp, name, "s%02d.npy" % i), x[start + i * rows:start + (i + 1) * rows])
PY
"$NFUSE" quantize "$tmp/b100.onnx" --calib "$calib" --calib-limit 200 --eval "$tmp/eval100" --precision mixed \
  --promote int16 --target-cosine 0.99999 -o "$tmp/b100q.onnx" --report "$tmp/b100.json" > "$tmp/b100.txt" 2>&1 ||
  { cat "$tmp/b100.txt"; echo "FAIL: quantize with a fixed batch of 100"; exit 1; }
"$NFUSE" quantize "$tmp/b1.onnx" --calib "$tmp/rows4" --eval "$tmp/rows4" -o "$tmp/b1q.onnx" --report "$tmp/b1.json" \
  > "$tmp/b1.txt" 2>&1 || { cat "$tmp/b1.txt"; echo "FAIL: quantize with a fixed batch of 1 from 4-row files"; exit 1; }
"$PY" - "$tmp/b100.json" "$tmp/b1.json" <<'PY'
import json, sys
b100, b1 = (json.load(open(p)) for p in sys.argv[1:])
def need(c, msg):
    if not c:
        print("FAIL:", msg); sys.exit(1)
need(b100["calibration"]["samples"] == 200 and b100["evaluation"]["samples"] == 200, "batch 100: sample counts")
need(b100["output"]["cosine"] > 0.999, "batch 100: held-out cosine %.6f" % b100["output"]["cosine"])
m = b100["mixed_precision"]
need(m["speed"]["int8_ms"] > 0, "batch 100: the mixed search timed the model")
# The worst sample is one image (an output row), not a batch of 100: clearly below the average.
need(m["worst_sample_cosine_before"] < m["output_before"]["cosine"] - 5e-5,
     "batch 100: worst sample %.6f vs all %.6f" % (m["worst_sample_cosine_before"], m["output_before"]["cosine"]))
need(all(l["alone"] is not None for l in b100["layers"]), "batch 100: every layer's sensitivity")
need(b100["sensitivity"]["samples"] % 100 == 0, "batch 100: sensitivity counted in samples, whole batches")
need(b1["calibration"]["samples"] == 40 and b1["output"]["cosine"] > 0.999, "batch 1 from 4-row files")
need(b1["sensitivity"]["set"] == "the first %d calibration samples" % b1["sensitivity"]["samples"],
     "batch 1: the sensitivity set %s" % b1["sensitivity"])
PY
if "$NFUSE" quantize "$tmp/b100.onnx" --calib "$tmp/odd" -o "$tmp/bad.onnx" > "$tmp/bad.txt" 2>&1; then
  echo "FAIL: 150 samples were accepted for a fixed batch of 100"; exit 1
fi
grep -q "loading --calib.*150 samples do not divide into the model's fixed batch of 100" "$tmp/bad.txt" ||
  { cat "$tmp/bad.txt"; echo "FAIL: the batch error does not name the step and the counts"; exit 1; }

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
expect_error "--weight-only" --weight-only --precision int16
expect_error "--weight-rounding" --weight-rounding stochastic
expect_error "--equalize" --equalize weights
expect_error "--conv-activations" --conv-activations table
if "$NFUSE" quantize "$model" --calib "$tmp/nothing_here" -o "$tmp/bad.onnx" > "$tmp/bad.txt" 2>&1; then
  echo "FAIL: a missing calibration folder was accepted"; exit 1
fi
grep -q "nothing_here" "$tmp/bad.txt" || { cat "$tmp/bad.txt"; echo "FAIL: the error does not name the folder"; exit 1; }
echo "quantize CLI: ok"
