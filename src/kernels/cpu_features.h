// What the CPU we run on can do, detected once, and which instruction set the kernel families
// use. Kernel families pick their microkernels from `selected_isa()` (see f32-gemm/f32_gemm.h,
// `f32_gemm_config()`); tests force a lower ISA with `ScopedIsaOverride`.
//
// On x86-64 the features and cache sizes come from CPUID (with XGETBV for the state the OS
// saves) and the L3's sharers from sysfs; elsewhere from cpuinfo (NFUSE_HAVE_CPUINFO), and where
// cpuinfo is not linked (the kernels-only arm64 cross build) they are fixed at compile time: NEON
// is architectural on aarch64, and the cache sizes fall back to typical values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

namespace nfuse::kernels {

enum class Isa : uint8_t {
  kScalar,   // portable C++; always available
  kAvx2Fma,  // x86-64 AVX2 + FMA3
  kNeon,     // aarch64 Advanced SIMD
  kAvx512,   // x86-64 AVX-512F (with AVX2 + FMA3)
};

// Human-readable name of `isa` ("scalar", "avx2", "neon", "avx512").
const char* isa_name(Isa isa);

struct CpuFeatures {
  bool x86_avx2 = false;
  bool x86_fma3 = false;
  bool x86_avx512f = false;
  bool x86_avx512bw = false;    // AVX-512 byte/word (with VL: the integer kernels' masked stores)
  bool x86_avx512vl = false;
  bool x86_avx512vnni = false;  // vpdpbusd: the quantized GEMM's AVX-512 kernels (qu8-gemm)
  bool x86_avx512vbmi = false;  // vpermi2b / vpermb: the 256-entry byte lookup (x8-lut)
  bool arm_neon = false;
  // Data cache capacity available to one core, in bytes (the shared L3 divided among the cores
  // that share it).
  size_t l1d_bytes = 32 * 1024;
  size_t l2_bytes = 512 * 1024;
  size_t l3_bytes = 2 * 1024 * 1024;
};

// The features of this CPU, detected on first call (thread-safe); never fails: if detection does
// not work, only the scalar ISA is reported.
const CpuFeatures& cpu_features();

// True if kernels for `isa` are compiled into this binary and the CPU can run them.
bool isa_supported(Isa isa);

// The ISA kernel families use: the forced one (see ScopedIsaOverride) if any, else the best
// supported one.
Isa selected_isa();

// Forces `selected_isa()` to return `isa` (which must be supported) until destroyed; for tests
// and for benchmarking a lower ISA. Not meant to be nested across threads.
class ScopedIsaOverride {
 public:
  explicit ScopedIsaOverride(Isa isa);
  ~ScopedIsaOverride();
  ScopedIsaOverride(const ScopedIsaOverride&) = delete;
  ScopedIsaOverride& operator=(const ScopedIsaOverride&) = delete;

 private:
  std::optional<Isa> previous_;
};

}  // namespace nfuse::kernels
