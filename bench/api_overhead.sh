#!/usr/bin/env bash
# The C API's cost over the internal Session::run on mobilenet_v2 (224x224), at 1 and 2 threads,
# both sides interleaved in one process (bench/api_overhead.cpp). Target: at most 1% or 20 us,
# the larger.
#   bench/api_overhead.sh [BUILD_DIR]     env: ROUNDS (5), WARMUP (10), RUNS (50), BACKEND (auto)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
MODELS="$BUILD/models"
for t in 1 2; do
  "$BUILD/nfuse_api_overhead" "$MODELS/mobilenet_v2.onnx" "$MODELS/mobilenet_v2.input.npy" input --threads "$t" \
    --backend "${BACKEND:-auto}" --rounds "${ROUNDS:-5}" --warmup "${WARMUP:-10}" --runs "${RUNS:-50}"
done
