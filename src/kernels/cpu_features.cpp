#include "kernels/cpu_features.h"

#include <atomic>

#if defined(NFUSE_HAVE_CPUINFO)
#include <cpuinfo.h>
#endif

namespace nfuse::kernels {
namespace {

// -1: no override; otherwise the forced Isa's value.
std::atomic<int> g_forced_isa{-1};

CpuFeatures detect() {
  CpuFeatures f;
#if defined(__aarch64__)
  f.arm_neon = true;  // Advanced SIMD is mandatory in ARMv8-A.
#endif
#if defined(NFUSE_HAVE_CPUINFO)
  if (!cpuinfo_initialize()) {
    return f;
  }
#if defined(__x86_64__) || defined(__i386__)
  f.x86_avx2 = cpuinfo_has_x86_avx2();
  f.x86_fma3 = cpuinfo_has_x86_fma3();
  f.x86_avx512f = cpuinfo_has_x86_avx512f();  // cpuinfo also checks that the OS saves ZMM state
  f.x86_avx512bw = cpuinfo_has_x86_avx512bw();
  f.x86_avx512vl = cpuinfo_has_x86_avx512vl();
  f.x86_avx512vnni = cpuinfo_has_x86_avx512vnni();
  f.x86_avx512vbmi = cpuinfo_has_x86_avx512vbmi();
#endif
  if (const cpuinfo_cache* c = cpuinfo_get_l1d_cache(0); c != nullptr && c->size > 0) {
    f.l1d_bytes = c->size;
  }
  if (const cpuinfo_cache* c = cpuinfo_get_l2_cache(0); c != nullptr && c->size > 0) {
    f.l2_bytes = c->size;  // private per core on the CPUs we target (SMT siblings share it)
  }
  if (const cpuinfo_cache* c = cpuinfo_get_l3_cache(0); c != nullptr && c->size > 0) {
    const size_t sharers = c->processor_count > 0 ? c->processor_count : 1;
    f.l3_bytes = c->size / sharers;
  }
#endif
  return f;
}

}  // namespace

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return "scalar";
    case Isa::kAvx2Fma:
      return "avx2";
    case Isa::kNeon:
      return "neon";
    case Isa::kAvx512:
      return "avx512";
  }
  return "unknown";
}

const CpuFeatures& cpu_features() {
  static const CpuFeatures features = detect();
  return features;
}

bool isa_supported(Isa isa) {
  switch (isa) {
    case Isa::kScalar:
      return true;
    case Isa::kAvx2Fma:
#if defined(__x86_64__)
      return cpu_features().x86_avx2 && cpu_features().x86_fma3;
#else
      return false;
#endif
    case Isa::kNeon:
#if defined(__aarch64__)
      return cpu_features().arm_neon;
#else
      return false;
#endif
    case Isa::kAvx512:
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
      return cpu_features().x86_avx512f && cpu_features().x86_avx2 && cpu_features().x86_fma3;
#else
      return false;
#endif
  }
  return false;
}

Isa selected_isa() {
  const int forced = g_forced_isa.load(std::memory_order_relaxed);
  if (forced >= 0) {
    return static_cast<Isa>(forced);
  }
  static const Isa best = [] {
    for (Isa isa : {Isa::kAvx512, Isa::kAvx2Fma, Isa::kNeon}) {
      if (isa_supported(isa)) {
        return isa;
      }
    }
    return Isa::kScalar;
  }();
  return best;
}

ScopedIsaOverride::ScopedIsaOverride(Isa isa) {
  const int old = g_forced_isa.exchange(isa_supported(isa) ? static_cast<int>(isa) : -1);
  if (old >= 0) {
    previous_ = static_cast<Isa>(old);
  }
}

ScopedIsaOverride::~ScopedIsaOverride() { g_forced_isa.store(previous_ ? static_cast<int>(*previous_) : -1); }

}  // namespace nfuse::kernels
