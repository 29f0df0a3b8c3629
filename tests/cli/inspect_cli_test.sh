#!/usr/bin/env bash
# `nfuse inspect` and `nfuse run` on models written here with the ONNX helper: a Conv1d audio
# front-end whose `samples` dim is symbolic (the plan fails at the assumed 1, and the error says
# so and shows the --shape to pass; with it, inspect counts the MACs), and the same model with
# its node list reversed (imports, and `inspect -v` says it sorted the nodes).
# Usage: inspect_cli_test.sh NFUSE
set -euo pipefail
NFUSE="$1"
PY=/usr/bin/python3
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

"$PY" - "$tmp" <<'PY'
import sys
import numpy as np
from onnx import TensorProto, helper, numpy_helper, save
out = sys.argv[1]
w = numpy_helper.from_array(np.random.default_rng(0).standard_normal((8, 1, 512)).astype(np.float32), "w")
nodes = [
    helper.make_node("Conv", ["audio", "w"], ["frames"], name="stft", strides=[160]),
    helper.make_node("Relu", ["frames"], ["spec"], name="relu"),
]
def model(ns):
    g = helper.make_graph(ns, "audio_frontend",
                          [helper.make_tensor_value_info("audio", TensorProto.FLOAT, [1, 1, "samples"])],
                          [helper.make_tensor_value_info("spec", TensorProto.FLOAT, None)], [w])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
save(model(nodes), f"{out}/audio.onnx")
save(model(nodes[::-1]), f"{out}/audio_reversed.onnx")
PY

# At the assumed samples=1 the 512-tap conv cannot plan: the error names the assumption.
if "$NFUSE" inspect "$tmp/audio.onnx" > "$tmp/out.txt" 2> "$tmp/err.txt"; then fail "inspect planned samples=1"; fi
grep -q "symbolic dims set to 1: 'samples' (input 'audio' dim 2); pass --shape audio=1x1xSAMPLES to choose them" \
  "$tmp/err.txt" || fail "inspect error without the assumed dim: $(cat "$tmp/err.txt")"
if "$NFUSE" run "$tmp/audio.onnx" > "$tmp/out.txt" 2> "$tmp/err.txt"; then fail "run planned samples=1"; fi
grep -q "pass --shape audio=1x1xSAMPLES" "$tmp/err.txt" || fail "run error without the --shape hint: $(cat "$tmp/err.txt")"

# With the shape: (16000 - 512) / 160 + 1 = 97 frames of 8 channels, 512 MACs each.
"$NFUSE" inspect "$tmp/audio.onnx" --shape audio=1x1x16000 > "$tmp/out.txt" || fail "inspect with --shape"
grep -q "MACs        0.397 M" "$tmp/out.txt" || fail "MACs not counted: $(cat "$tmp/out.txt")"
"$NFUSE" inspect "$tmp/audio.onnx" --shape audio=1x1x16000 --json > "$tmp/out.json"
"$PY" - "$tmp/out.json" <<'PY' || fail "inspect --json"
import json, sys
j = json.load(open(sys.argv[1]))
assert j["macs"] == 97 * 8 * 512, j["macs"]
assert j["parameters_by_dtype"]["f32"]["elements"] == 8 * 512, j["parameters_by_dtype"]
assert j["assumed_dims"] == "", j["assumed_dims"]
PY

# Reversed node list: imports, runs, and -v says what the importer did.
"$NFUSE" inspect "$tmp/audio_reversed.onnx" --shape audio=1x1x16000 -v > "$tmp/out.txt" || fail "reversed model"
grep -q "import: graph 'audio_frontend': nodes are not in topological order ('relu' (Relu) reads 'frames', produced by 'stft' (Conv) later in the file)" \
  "$tmp/out.txt" || fail "no import note: $(cat "$tmp/out.txt")"
"$NFUSE" run "$tmp/audio_reversed.onnx" --shape audio=1x1x16000 > /dev/null || fail "run of the reversed model"
echo "inspect_cli: ok"
