// Which microkernels and cache blocking each ISA uses (XNNPACK-style explicit config), built once
// from the detected cache sizes.
//
// Blocking, for a microkernel of MR x NR and this core's cache sizes (cpu_features()):
//   KC = (L1d / 2) / (NR * 4 B), a multiple of 8 in [64, 1024]: the kc x NR B micro-panel fills half
//        of L1 and stays there while A panels (MR x kc, a few KiB) stream through the other half.
//        32 KiB L1d (Zen3): KC = 256 for NR = 16; 48 KiB (Zen5, the dev machine): 384, NR = 32: 192.
//   MC = (L2 / 2) / (KC * 4 B), a multiple of MR in [MR, 1020]: the packed A block fills half of
//        L2; the other half holds the B panels passing through on their way to L1 and the C tiles.
//        512 KiB L2, KC = 256: MC = 252; 1 MiB L2 (Zen5): 336 (AVX2), 672 (AVX-512).
//   NC = (L3 share / 2) / (KC * 4 B), a multiple of NR in [16 NR, 8192]: the kc x NC slice of packed
//        B that every M block sweeps stays in this core's share of L3, so A is repacked only once
//        per NC columns. 32 MiB L3 / 16 threads, KC = 256: NC = 1024.
#include <array>

#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::kernels {
namespace {

// Rows per unit time of the 8-row AVX-512 variant relative to the 12-row primary, at equal K
// when the FMAs bound both: 0.85-0.95 on Sapphire Rapids (1x1 convs of 128-1024 channels, B in L1
// or L2; bench/RESULTS.md 2026-12-07).
constexpr double kVariantRowRate = 0.9;
// Column panels per A panel from which the FMAs, not A's reads, bound a GEMM (1x1 convs of 14x14
// maps and larger gained 7-10% from the primary; 7x7 maps and Winograd's few tiles did not).
constexpr size_t kComputeBoundPanels = 4;

size_t clamp_round(size_t v, size_t multiple, size_t lo, size_t hi) {
  v = v / multiple * multiple;
  return v < lo ? lo : (v > hi ? hi / multiple * multiple : v);
}

F32GemmConfig make(const char* name, Isa isa, size_t mr, size_t nr, F32GemmUkernelFn ukernel,
                   F32GemmUkernelFn ukernel_1) {
  const CpuFeatures& cpu = cpu_features();
  F32GemmConfig c;
  c.name = name;
  c.isa = isa;
  c.mr = mr;
  c.nr = nr;
  c.ukernel = ukernel;
  c.ukernel_1 = ukernel_1;
  c.kc = clamp_round(cpu.l1d_bytes / 2 / (nr * sizeof(float)), 8, 64, 1024);
  c.mc = clamp_round(cpu.l2_bytes / 2 / (c.kc * sizeof(float)), mr, mr, 1020);
  c.nc = clamp_round(cpu.l3_bytes / 2 / (c.kc * sizeof(float)), nr, 16 * nr, 8192);
  return c;
}

struct Configs {
  std::array<F32GemmConfig, 4> by_isa{};  // indexed by Isa
  std::array<bool, 4> present{};
  std::array<F32GemmConfig, 4> variant_by_isa{};  // nr == 0: none
};

const Configs& configs() {
  static const Configs all = [] {
    Configs c;
    auto add = [&c](const F32GemmConfig& cfg) {
      c.by_isa[static_cast<size_t>(cfg.isa)] = cfg;
      c.present[static_cast<size_t>(cfg.isa)] = isa_supported(cfg.isa);
    };
    add(make("scalar_4x8", Isa::kScalar, 4, 8, f32_gemm__scalar_4x8, f32_gemm__scalar_1x8));
#if defined(__x86_64__)
    add(make("avx2_6x16", Isa::kAvx2Fma, 6, 16, f32_gemm__avx2_6x16, f32_gemm__avx2_1x16));
#endif
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
    add(make("avx512_12x32", Isa::kAvx512, 12, 32, f32_gemm__avx512_12x32, f32_gemm__avx512_1x32));
    c.variant_by_isa[static_cast<size_t>(Isa::kAvx512)] =
        make("avx512_8x32", Isa::kAvx512, 8, 32, f32_gemm__avx512_8x32, f32_gemm__avx512_1x32);
#endif
#if defined(__aarch64__)
    add(make("neon_8x8", Isa::kNeon, 8, 8, f32_gemm__neon_8x8, f32_gemm__neon_1x8));
#endif
    return c;
  }();
  return all;
}

}  // namespace

const F32GemmConfig* f32_gemm_config(Isa isa) {
  const size_t i = static_cast<size_t>(isa);
  const Configs& c = configs();
  return i < c.present.size() && c.present[i] ? &c.by_isa[i] : nullptr;
}

const F32GemmConfig& f32_gemm_config() {
  const F32GemmConfig* cfg = f32_gemm_config(selected_isa());
  return cfg != nullptr ? *cfg : *f32_gemm_config(Isa::kScalar);
}

std::vector<const F32GemmConfig*> f32_gemm_configs() {
  const Configs& c = configs();
  std::vector<const F32GemmConfig*> out;
  for (size_t i = 0; i < c.by_isa.size(); ++i) {
    if (!c.present[i]) continue;
    out.push_back(&c.by_isa[i]);
    if (c.variant_by_isa[i].nr != 0) out.push_back(&c.variant_by_isa[i]);
  }
  return out;
}

const F32GemmConfig& f32_gemm_config_for_rows(size_t m, size_t n) {
  const F32GemmConfig& primary = f32_gemm_config();
  const F32GemmConfig& variant = configs().variant_by_isa[static_cast<size_t>(primary.isa)];
  if (variant.nr == 0 || m == 0) return primary;
  // Time ~ rows computed (padding included) / rows per second. With several column panels per A
  // panel the FMAs bound the kernel, and the variant's fewer accumulators hide less of B's load
  // latency: it computes a row more slowly and wins only where the primary pads by more than
  // that. With few columns, reading A bounds both and only the padding counts.
  const bool compute_bound = n >= kComputeBoundPanels * primary.nr;
  const double variant_rate = compute_bound ? kVariantRowRate : 1.0;
  auto padded = [m](size_t mr) { return static_cast<double>((m + mr - 1) / mr * mr); };
  return padded(variant.mr) / variant_rate < padded(primary.mr) ? variant : primary;
}

}  // namespace nfuse::kernels
