#!/usr/bin/env bash
# arm64, the phones nfuse is for, under qemu-aarch64:
#  1. the kernels and their tests (NFUSE_KERNELS_ONLY, linked statically) run under qemu;
#  2. the whole library cross-built against Debian's arm64 packages (a sysroot made by
#     scripts/arm64-sysroot.sh), the C example examples/c/run_model.c built against it, and run
#     on the zoo's mobilenet_v2 with its output checked against PyTorch's golden.
#   scripts/test-arm64.sh [build-dir] [models-dir] [-- gtest args...]
# Needs: g++-aarch64-linux-gnu, qemu-user, googletest (sources in /usr/src/googletest), the
# zoo models (make models).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-arm64}
[[ $# -gt 0 ]] && shift
models=${1:-$root/build/models}
[[ $# -gt 0 && "${1:-}" != "--" ]] && shift
[[ "${1:-}" == "--" ]] && shift
build=$(mkdir -p "$build" && cd "$build" && pwd)

for tool in aarch64-linux-gnu-g++ qemu-aarch64; do
  command -v "$tool" >/dev/null || { echo "test-arm64: $tool not found (apt-get install g++-aarch64-linux-gnu qemu-user)" >&2; exit 1; }
done
for f in mobilenet_v2.onnx mobilenet_v2.input.npy mobilenet_v2.golden.npy; do
  [[ -f "$models/$f" ]] || { echo "test-arm64: $models/$f missing (make models)" >&2; exit 1; }
done

generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
jobs=${NFUSE_JOBS:-2}

echo "== arm64 kernels (static, qemu-aarch64)"
cmake -S "$root" -B "$build" "${generator[@]}" \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu.cmake" \
  -DNFUSE_KERNELS_ONLY=ON -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" --target nfuse_kernels_tests -j "$jobs"
exe="$build/tests/nfuse_kernels_tests"
file "$exe" 2>/dev/null || true
qemu-aarch64 "$exe" "$@"

echo "== arm64 libnfuse.so and examples/c/run_model.c (qemu-aarch64)"
sysroot=${NFUSE_ARM64_SYSROOT:-$build-sysroot}
NFUSE_ARM64_DEB_CACHE=${NFUSE_ARM64_DEB_CACHE:-$build-debs} bash "$root/scripts/arm64-sysroot.sh" "$sysroot"
full=$build-full
cmake -S "$root" -B "$full" "${generator[@]}" \
  -DCMAKE_TOOLCHAIN_FILE="$root/cmake/aarch64-linux-gnu-sysroot.cmake" \
  -DNFUSE_ARM64_SYSROOT="$sysroot" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$full" --target nfuse_shared -j "$jobs"
lib=$(readlink -f "$full/libnfuse.so")
file "$lib" 2>/dev/null || true
aarch64-linux-gnu-gcc -std=c99 -Wall -Wextra -Werror -pedantic -I"$root/include" "$root/examples/c/run_model.c" \
  -o "$full/run_model" -L"$full" -lnfuse -Wl,-rpath-link,"$sysroot/usr/lib/aarch64-linux-gnu" \
  -Wl,-rpath-link,"$sysroot/lib/aarch64-linux-gnu" \
  -Wl,-rpath-link,/usr/aarch64-linux-gnu/lib
guest_path="$full:$sysroot/usr/lib/aarch64-linux-gnu:$sysroot/lib/aarch64-linux-gnu"
out=$full/run_model_out
rm -rf "$out" && mkdir -p "$out"
qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH="$guest_path" "$full/run_model" \
  "$models/mobilenet_v2.onnx" "input=$models/mobilenet_v2.input.npy" "$out"
/usr/bin/python3 "$root/tests/support/check_run_model_output.py" "$out" "$models/mobilenet_v2.golden.npy" "arm64 run_model on mobilenet_v2"
# Errors reach the caller as a message and a non-zero exit, on arm64 too.
if qemu-aarch64 -L /usr/aarch64-linux-gnu -E LD_LIBRARY_PATH="$guest_path" "$full/run_model" \
    "$models/mobilenet_v2.onnx" "$out" 2>"$out/err.txt"; then
  echo "arm64 run_model without its input succeeded" >&2; exit 1
fi
grep -q "input 'input' was not given" "$out/err.txt" || { echo "arm64 run_model: unexpected error text: $(cat "$out/err.txt")" >&2; exit 1; }
echo "arm64: kernels tests passed; libnfuse.so cross-built; run_model agrees with PyTorch; errors reported"
