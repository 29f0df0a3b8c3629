#!/usr/bin/env bash
# Cross-builds the kernels and their tests for arm64 (NFUSE_KERNELS_ONLY: no ONNX/protobuf, which
# Debian does not ship for arm64 here) and runs them under qemu-aarch64.
#   scripts/test-arm64.sh [build-dir] [-- gtest args...]
# Needs: g++-aarch64-linux-gnu, qemu-user, googletest (sources in /usr/src/googletest).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-arm64}
[[ $# -gt 0 ]] && shift
[[ "${1:-}" == "--" ]] && shift

for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "test-arm64: $tool not found (apt-get install g++-aarch64-linux-gnu qemu-user)" >&2; exit 1; }
done

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S "$root" -B "$build" "${generator[@]}" \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
  -DNFUSE_KERNELS_ONLY=ON -DCMAKE_BUILD_TYPE=Release
cmake --build "$build" --target nfuse_kernels_tests -j "${NFUSE_JOBS:-2}"

exe="$build/tests/nfuse_kernels_tests"
file "$exe" 2>/dev/null || true
qemu-aarch64 "$exe" "$@"
