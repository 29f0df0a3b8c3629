#!/usr/bin/env bash
# The runtime's cost per node: a chain of N tiny element-wise ops (Add, Mul by constants, Relu,
# Sigmoid, Max, in turn, over 1x16 floats: ~0.01 us of arithmetic each) run with `nfuse bench`
# (median of RUNS after WARMUP), and the same chain of 1 node; (chain - one) / (N - 1) is what
# dispatch, checks and bookkeeping cost per node. Every backend at 1 and 2 threads.
#   bench/node_overhead.sh [BUILD_DIR]     env: NODES (1000), WARMUP (10), RUNS (50)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
NFUSE="$BUILD/nfuse"
NODES="${NODES:-1000}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 - "$TMP" "$NODES" <<'PY'
import sys, numpy as np, onnx
from onnx import helper, numpy_helper, TensorProto
out, n = sys.argv[1], int(sys.argv[2])
def chain(count):
    nodes, inits, prev = [], [], "x"
    for i in range(count):
        kind, y = i % 5, f"v{i}"
        if kind in (0, 1, 4):
            c = f"c{i}"
            inits.append(numpy_helper.from_array(np.full((1, 16), 0.5 + 0.001 * i, np.float32), c))
            nodes.append(helper.make_node(["Add", "Mul", "", "", "Max"][kind], [prev, c], [y], name=f"n{i}"))
        else:
            nodes.append(helper.make_node("Relu" if kind == 2 else "Sigmoid", [prev], [y], name=f"n{i}"))
        prev = y
    g = helper.make_graph(nodes, f"chain{count}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 16])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(chain(n), f"{out}/chain.onnx")
onnx.save(chain(1), f"{out}/one.onnx")
PY
median_ms() { "$NFUSE" bench "$1" --backend "$2" --threads "$3" --no-optimize --warmup "${WARMUP:-10}" --runs "${RUNS:-50}" --json |
  sed -n 's/.*"median_ms":\([^,}]*\).*/\1/p'; }
printf "%-8s %7s %12s %12s %14s\n" backend threads "chain ms" "1-node ms" "us per node"
for backend in ref cpu fusion; do
  for t in 1 2; do
    chain=$(median_ms "$TMP/chain.onnx" "$backend" "$t")
    one=$(median_ms "$TMP/one.onnx" "$backend" "$t")
    printf "%-8s %7d %12.4f %12.4f %14.3f\n" "$backend" "$t" "$chain" "$one" \
      "$(awk -v c="$chain" -v o="$one" -v n="$NODES" 'BEGIN { print (c - o) * 1000 / (n - 1) }')"
  done
done
