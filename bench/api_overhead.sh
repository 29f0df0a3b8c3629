#!/usr/bin/env bash
# The C API's cost over the internal Session::run, both sides interleaved in one process
# (bench/api_overhead.cpp), at 1 and 2 threads:
#   mobilenet_v2 (224x224): the issue's target, at most 1% or 20 us, the larger;
#   a one-node Relu over 1x16 floats: the per-call cost itself, where a run costs next to nothing.
#   bench/api_overhead.sh [BUILD_DIR]     env: ROUNDS (15), WARMUP (10), RUNS (50), BACKEND (auto)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
MODELS="$BUILD/models"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 - "$TMP" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, TensorProto
g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"], name="relu")], "tiny",
                      [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                      [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 16])])
onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)]), sys.argv[1] + "/relu.onnx")
np.save(sys.argv[1] + "/relu.npy", np.linspace(-1, 1, 16, dtype=np.float32).reshape(1, 16))
PY
common=(--backend "${BACKEND:-auto}" --rounds "${ROUNDS:-15}" --warmup "${WARMUP:-10}" --runs "${RUNS:-50}")
for t in 1 2; do
  "$BUILD/nfuse_api_overhead" "$MODELS/mobilenet_v2.onnx" "$MODELS/mobilenet_v2.input.npy" input --threads "$t" "${common[@]}"
done
for t in 1 2; do
  "$BUILD/nfuse_api_overhead" "$TMP/relu.onnx" "$TMP/relu.npy" x --threads "$t" "${common[@]}" --runs 2000
done
