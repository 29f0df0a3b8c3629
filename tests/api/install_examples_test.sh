#!/usr/bin/env bash
# An application's view of nfuse: install the build into a temporary prefix, build the examples
# against it with find_package (shared and static) and with pkg-config (shared and static), and
# run each on zoo models whose expected outputs PyTorch produced:
#   run_model on mobilenet_v2: every output within the zoo tolerance of PyTorch's golden;
#   classify on Fashion-MNIST test images: the top-5 classes in PyTorch's order.
#   install_examples_test.sh BUILD_DIR MODELS_DIR SOURCE_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
models=$(cd "$2" && pwd)
src=$(cd "$3" && pwd)
py=/usr/bin/python3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix

cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/nfuse/nfuse.h" && test -f "$prefix/include/nfuse/nfuse.hpp"
test ! -e "$prefix/include/nfuse/status.h"  # internal headers stay internal
libdir=$(dirname "$(find "$prefix" -name 'libnfuse.so' | head -1)")
test -f "$libdir/libnfuse.a"

# Fashion-MNIST test images as PGM files, their PyTorch top-5 and the labels file.
"$py" - "$models/fashion_mnist" "$work" <<'PYEOF'
import gzip, os, sys
import numpy as np
data_dir, work = sys.argv[1], sys.argv[2]
fm = os.environ.get("NFUSE_FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
with gzip.open(os.path.join(fm, "t10k-images-idx3-ubyte.gz")) as f:
    images = np.frombuffer(f.read(), np.uint8, offset=16).reshape(-1, 28, 28)
logits = np.load(os.path.join(data_dir, "test_logits.npy"))
labels = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
with open(os.path.join(work, "labels.txt"), "w") as f:
    f.write("\n".join(labels) + "\n")
for i in (0, 1, 7, 123):
    with open(os.path.join(work, f"image_{i}.pgm"), "wb") as f:
        f.write(b"P5\n28 28\n255\n" + images[i].tobytes())
    with open(os.path.join(work, f"image_{i}.top5"), "w") as f:
        f.write(" ".join(str(int(c)) for c in np.argsort(-logits[i], kind="stable")[:5]) + "\n")
PYEOF

check_run_model() {  # BINARY
  local out=$work/out_$(basename "$(dirname "$1")")
  rm -rf "$out" && mkdir -p "$out"
  "$1" "$models/mobilenet_v2.onnx" "input=$models/mobilenet_v2.input.npy" "$out" >/dev/null
  "$py" "$src/tests/support/check_run_model_output.py" "$out" "$models/mobilenet_v2.golden.npy" "run_model" >/dev/null
  # Errors reach the caller as a message and a non-zero exit.
  if "$1" "$models/mobilenet_v2.onnx" "$out" 2>"$work/err.txt"; then
    echo "run_model without its input succeeded"; return 1
  fi
  grep -q "input 'input' was not given" "$work/err.txt"
}

check_classify() {  # BINARY
  local i
  for i in 0 1 7 123; do
    "$1" "$models/fashion_mnist_cnn.onnx" "$work/image_$i.pgm" "$work/labels.txt" --mean 0.2860 --std 0.3530 \
      >"$work/classify_$i.txt"
    got=$(awk '{print $3}' "$work/classify_$i.txt" | tr '\n' ' ' | sed 's/ $//')
    want=$(cat "$work/image_$i.top5")
    if [ "$got" != "$want" ]; then
      echo "classify image $i: top-5 $got, PyTorch $want"; cat "$work/classify_$i.txt"; return 1
    fi
  done
}

# 1-2. find_package, shared and static.
for link in shared static; do
  cmake -S "$src/examples" -B "$work/ex_$link" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$prefix" \
    -DNFUSE_LINK=$link -DCMAKE_BUILD_RPATH="$libdir" >/dev/null
  cmake --build "$work/ex_$link" >/dev/null
  check_run_model "$work/ex_$link/run_model"
  check_classify "$work/ex_$link/classify"
  echo "find_package ($link): run_model and classify agree with PyTorch"
done
if readelf -d "$work/ex_static/run_model" | grep -q 'libnfuse\.so'; then
  echo "the static example links libnfuse.so"; exit 1
fi

# 3-4. pkg-config, shared and static.
export PKG_CONFIG_PATH=$libdir/pkgconfig
mkdir -p "$work/pc_shared" "$work/pc_static"
cc -std=c99 -Wall -Wextra -Werror -pedantic $(pkg-config --cflags nfuse) "$src/examples/c/run_model.c" \
  -o "$work/pc_shared/run_model" $(pkg-config --libs nfuse) -Wl,-rpath,"$libdir"
c++ -std=c++17 -Wall -Wextra -Werror -pedantic $(pkg-config --cflags nfuse) "$src/examples/cpp/classify.cpp" \
  -o "$work/pc_shared/classify" $(pkg-config --libs nfuse) -Wl,-rpath,"$libdir"
cc -std=c99 -Wall -Wextra -Werror -pedantic $(pkg-config --cflags nfuse) "$src/examples/c/run_model.c" \
  -o "$work/pc_static/run_model" "$libdir/libnfuse.a" $(pkg-config --static --libs-only-l nfuse | sed 's/-lnfuse//')
check_run_model "$work/pc_shared/run_model"
check_classify "$work/pc_shared/classify"
check_run_model "$work/pc_static/run_model"
echo "pkg-config (shared, static): run_model and classify agree with PyTorch"
