#!/usr/bin/env bash
# The ONNX Runtime peer (npm onnxruntime-node 1.30.0, its CPU provider) under DIR (default
# .cache/ort), for the tests and benchmarks that compare with it. Reused when present. The plain
# install fails fetching the optional GPU parts; the CPU library ships in the package itself.
# A failed install (no npm registry) is a warning: the ORT comparisons then skip, saying so.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
DIR="${1:-$ROOT/.cache/ort}"
if [[ -d "$DIR/node_modules/onnxruntime-node" ]]; then
  exit 0
fi
mkdir -p "$DIR"
if ! (cd "$DIR" && ONNXRUNTIME_NODE_INSTALL=skip npm install --ignore-scripts --no-audit --no-fund \
        onnxruntime-node@1.30.0 >/dev/null 2>&1); then
  echo "install_ort_peer.sh: warning: could not install onnxruntime-node@1.30.0 into $DIR;" \
       "the ONNX Runtime comparisons will skip" >&2
fi
