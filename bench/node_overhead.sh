#!/usr/bin/env bash
# The runtime's cost per node: a chain of N tiny element-wise ops (Add, Mul by constants, Relu,
# Sigmoid, Max, in turn, over 1x16 floats: ~0.01 us of arithmetic each) run with `nfuse bench`
# (median of RUNS after WARMUP), and the same chain of 1 node; (chain - one) / (N - 1) is what
# dispatch, checks and bookkeeping cost per node. Every backend at 1 and 2 threads.
# Then the cost of entering a compiled If body: a chain of IF_NODES If nodes (a condition fed at run
# time, one Add in each branch) against the same chain of plain Adds; the difference per If.
#   bench/node_overhead.sh [BUILD_DIR]     env: NODES (1000), IF_NODES (100), WARMUP (10), RUNS (50)
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD="${1:-$ROOT/build}"
NFUSE="$BUILD/nfuse"
NODES="${NODES:-1000}"
IFS_COUNT="${IF_NODES:-100}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
/usr/bin/python3 - "$TMP" "$NODES" "$IFS_COUNT" <<'PY'
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
def if_chain(count, wrapped):
    nodes, inits, prev = [], [], "x"
    for i in range(count):
        y = f"v{i}"
        if not wrapped:
            inits.append(numpy_helper.from_array(np.full((1, 16), 0.5, np.float32), f"c{i}"))
            nodes.append(helper.make_node("Add", [prev, f"c{i}"], [y], name=f"n{i}"))
        else:
            def branch(tag, value):
                c = numpy_helper.from_array(np.full((1, 16), value, np.float32), f"{tag}c{i}")
                return helper.make_graph([helper.make_node("Add", [prev, f"{tag}c{i}"], [f"{tag}{y}"])], f"{tag}{i}", [],
                                         [helper.make_tensor_value_info(f"{tag}{y}", TensorProto.FLOAT, [1, 16])], [c])
            nodes.append(helper.make_node("If", ["cond"], [y], name=f"n{i}", then_branch=branch("t", 0.5),
                                          else_branch=branch("e", 0.25)))
        prev = y
    ins = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16])]
    if wrapped: ins.append(helper.make_tensor_value_info("cond", TensorProto.BOOL, []))
    g = helper.make_graph(nodes, "ifs" if wrapped else "adds", ins,
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, 16])], inits)
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
onnx.save(if_chain(int(sys.argv[3]), True), f"{out}/ifs.onnx")
onnx.save(if_chain(int(sys.argv[3]), False), f"{out}/adds.onnx")
PY
median_ms() { "$NFUSE" bench "$1" --backend "$2" --threads "$3" --no-optimize --warmup "${WARMUP:-10}" --runs "${RUNS:-50}" --json |
  sed -n 's/.*"median_ms":\([^,}]*\).*/\1/p'; }
# difference_table MODEL BASE DIVISOR LABELS... BACKENDS...: (MODEL - BASE) * 1000 / DIVISOR in us
# for each backend at 1 and 2 threads.
difference_table() {
  local model=$1 base=$2 divisor=$3 model_label=$4 base_label=$5 unit_label=$6
  shift 6
  printf "%-8s %7s %12s %12s %14s\n" backend threads "$model_label" "$base_label" "$unit_label"
  for backend in "$@"; do
    for t in 1 2; do
      a=$(median_ms "$model" "$backend" "$t")
      b=$(median_ms "$base" "$backend" "$t")
      printf "%-8s %7d %12.4f %12.4f %14.3f\n" "$backend" "$t" "$a" "$b" \
        "$(awk -v a="$a" -v b="$b" -v n="$divisor" 'BEGIN { print (a - b) * 1000 / n }')"
    done
  done
}
difference_table "$TMP/chain.onnx" "$TMP/one.onnx" $((NODES - 1)) "chain ms" "1-node ms" "us per node" ref cpu fusion
echo
difference_table "$TMP/ifs.onnx" "$TMP/adds.onnx" "$IFS_COUNT" "If chain ms" "Add chain ms" "us per If" cpu fusion
