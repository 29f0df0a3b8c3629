// The 16-bit-activation GEMM's configurations, packing and driver (arithmetic: qs16_gemm.h).
//
// Loop nest (no K blocking: a microkernel call covers the whole K and requantizes at once):
//   for each M block (mc rows): pack A             mc x kpad int16 A block in half of L2
//     for each NR-wide B panel                      kpad x NR s8 panel
//       for each MR-high A panel: ukernel           (then 1 x NR ukernel_1 per tail row)
#include "kernels/qs16-gemm/qs16_gemm.h"
#include "kernels/int_gemm_variants.h"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace nfuse::kernels {
namespace {

constexpr size_t kWorkspaceAlign = 64;

size_t div_up(size_t x, size_t y) { return (x + y - 1) / y; }
size_t round_up(size_t x, size_t y) { return div_up(x, y) * y; }

Qs16GemmConfig make(const char* name, Isa isa, size_t mr, size_t nr, size_t kr, Qs16GemmUkernelFn ukernel,
                    Qs16GemmUkernelFn ukernel_1) {
  Qs16GemmConfig c;
  c.name = name;
  c.isa = isa;
  c.mr = mr;
  c.nr = nr;
  c.kr = kr;
  c.ukernel = ukernel;
  c.ukernel_1 = ukernel_1;
  return c;
}

// M block for K: the packed A block (mc x kpad int16) fills half of L2.
size_t m_block(const Qs16GemmConfig& cfg, size_t k) {
  const size_t row_bytes = round_up(k > 0 ? k : 1, cfg.kr) * sizeof(int16_t);
  size_t mc = cpu_features().l2_bytes / 2 / row_bytes / cfg.mr * cfg.mr;
  mc = mc < cfg.mr ? cfg.mr : mc;
  return mc > 1024 ? 1024 / cfg.mr * cfg.mr : mc;
}

size_t panel_bytes(const Qs16GemmConfig& cfg, size_t kpad) {
  return cfg.nr * sizeof(int64_t) + kpad * cfg.nr + cfg.nr * sizeof(float);
}

using Configs = IntGemmVariants<Qs16GemmConfig>;

const Configs& configs() {
  static const Configs all = [] {
    Configs c;
    c.scalar = make("scalar_4x4", Isa::kScalar, 4, 4, 1, qs16_gemm__scalar_4x4, qs16_gemm__scalar_1x4);
#if defined(__x86_64__)
    c.avx2 = make("avx2_4x16c2", Isa::kAvx2Fma, 4, 16, 2, qs16_gemm__avx2_4x16c2, qs16_gemm__avx2_1x16c2);
    c.has_avx2 = isa_supported(Isa::kAvx2Fma);
#endif
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
    c.avx512vnni = make("avx512vnni_8x32c2", Isa::kAvx512, 8, 32, 2, qs16_gemm__avx512vnni_8x32c2,
                        qs16_gemm__avx512vnni_1x32c2);
    const CpuFeatures& f = cpu_features();
    c.has_avx512vnni = isa_supported(Isa::kAvx512) && f.x86_avx512bw && f.x86_avx512vl && f.x86_avx512vnni;
#endif
#if defined(__aarch64__)
    c.neon = make("neon_8x8", Isa::kNeon, 8, 8, 1, qs16_gemm__neon_8x8, qs16_gemm__neon_1x8);
    c.has_neon = isa_supported(Isa::kNeon);
#endif
    return c;
  }();
  return all;
}

}  // namespace

const Qs16GemmConfig* qs16_gemm_config(Isa isa) { return configs().for_isa(isa); }

const Qs16GemmConfig& qs16_gemm_config() { return configs().selected(); }

std::vector<const Qs16GemmConfig*> qs16_gemm_configs() { return configs().all(); }

size_t qs16_gemm_packed_b_size(const Qs16GemmConfig& cfg, size_t k, size_t n) {
  return div_up(n, cfg.nr) * panel_bytes(cfg, round_up(k, cfg.kr));
}

void qs16_gemm_pack_b(const Qs16GemmConfig& cfg, size_t k, size_t n, const int8_t* b, size_t b_k_stride,
                      size_t b_n_stride, const int32_t* bias, const float* multiplier, int32_t a_zero_point,
                      bool a_unsigned, void* packed) {
  const size_t nr = cfg.nr, kr = cfg.kr, kpad = round_up(k, kr);
  const int64_t a_zp = a_zero_point - (a_unsigned ? 32768 : 0);
  uint8_t* out = static_cast<uint8_t*>(packed);
  for (size_t j0 = 0; j0 < n; j0 += nr) {
    const size_t cols = n - j0 < nr ? n - j0 : nr;
    uint8_t* bias_dst = out;
    int8_t* w = reinterpret_cast<int8_t*>(out + nr * sizeof(int64_t));
    uint8_t* mult_dst = out + nr * sizeof(int64_t) + kpad * nr;
    for (size_t jj = 0; jj < nr; ++jj) {
      int64_t colsum = 0;
      for (size_t kk = 0; kk < kpad; ++kk) {
        const int8_t v = jj < cols && kk < k ? b[kk * b_k_stride + (j0 + jj) * b_n_stride] : int8_t{0};
        colsum += v;
        w[(kk / kr * nr + jj) * kr + kk % kr] = v;
      }
      int64_t bias_v = 0;
      float mult_v = 0.0f;
      if (jj < cols) {
        bias_v = (bias != nullptr ? bias[j0 + jj] : 0) - a_zp * colsum;
        mult_v = multiplier != nullptr ? multiplier[j0 + jj] : 1.0f;
      }
      std::memcpy(bias_dst + jj * sizeof(int64_t), &bias_v, sizeof bias_v);
      std::memcpy(mult_dst + jj * sizeof(float), &mult_v, sizeof mult_v);
    }
    out = mult_dst + nr * sizeof(float);
  }
}

void qs16_gemm_pack_a(size_t mr, size_t kr, size_t rows, size_t k, const uint16_t* a, size_t a_row_stride,
                      size_t a_col_stride, bool a_unsigned, int16_t* packed) {
  const uint16_t flip = a_unsigned ? 0x8000 : 0;
  const size_t groups = div_up(k, kr);
  if (a_col_stride == 1 && rows == mr && k % kr == 0) {  // the hot case: contiguous rows
    if (kr == 2) {  // one 32-bit copy per row and K pair
      const uint32_t flip2 = flip * 0x00010001u;
      size_t g0 = 0;
#if defined(__SSE2__)
      // Four rows by four K pairs at a time: a 4 x 4 transpose of 32-bit pairs in registers
      // instead of a 4-byte gather per row and pair (the packing cost about as much as the GEMM).
      if (mr % 4 == 0) {
        const __m128i f = _mm_set1_epi32(static_cast<int>(flip2));
        for (; g0 + 4 <= groups; g0 += 4) {
          for (size_t r0 = 0; r0 < mr; r0 += 4) {
            auto row = [&](size_t r) {
              return _mm_loadu_si128(reinterpret_cast<const __m128i*>(a + (r0 + r) * a_row_stride + g0 * 2));
            };
            const __m128i x0 = row(0), x1 = row(1), x2 = row(2), x3 = row(3);
            const __m128i t0 = _mm_unpacklo_epi32(x0, x1), t1 = _mm_unpacklo_epi32(x2, x3);
            const __m128i t2 = _mm_unpackhi_epi32(x0, x1), t3 = _mm_unpackhi_epi32(x2, x3);
            const __m128i y[4] = {_mm_unpacklo_epi64(t0, t1), _mm_unpackhi_epi64(t0, t1), _mm_unpacklo_epi64(t2, t3),
                                  _mm_unpackhi_epi64(t2, t3)};
            for (size_t j = 0; j < 4; ++j)
              _mm_storeu_si128(reinterpret_cast<__m128i*>(packed + ((g0 + j) * mr + r0) * 2), _mm_xor_si128(y[j], f));
          }
        }
        packed += g0 * mr * 2;
      }
#endif
      for (size_t g = g0; g < groups; ++g) {
        for (size_t r = 0; r < mr; ++r) {
          uint32_t v;
          std::memcpy(&v, a + r * a_row_stride + g * 2, sizeof v);
          v ^= flip2;
          std::memcpy(packed, &v, sizeof v);
          packed += 2;
        }
      }
      return;
    }
    for (size_t g = 0; g < groups; ++g) {
      for (size_t r = 0; r < mr; ++r) {
        const uint16_t* src = a + r * a_row_stride + g * kr;
        for (size_t t = 0; t < kr; ++t) *packed++ = static_cast<int16_t>(src[t] ^ flip);
      }
    }
    return;
  }
  for (size_t g = 0; g < groups; ++g) {
    for (size_t r = 0; r < mr; ++r) {
      for (size_t t = 0; t < kr; ++t) {
        const size_t kk = g * kr + t;
        *packed++ = r < rows && kk < k ? static_cast<int16_t>(a[r * a_row_stride + kk * a_col_stride] ^ flip)
                                       : int16_t{0};
      }
    }
  }
}

size_t qs16_gemm_workspace_size(const Qs16GemmConfig& cfg, size_t k) {
  return m_block(cfg, k) * round_up(k > 0 ? k : 1, cfg.kr) * sizeof(int16_t) + kWorkspaceAlign;
}

void qs16_gemm(const Qs16GemmConfig& cfg, const Qs16GemmArgs& args, size_t m0, size_t m1, size_t n0, size_t n1,
               void* workspace) {
  if (m0 >= m1 || n0 >= n1) return;
  const size_t mr = cfg.mr, nr = cfg.nr, k = args.k;
  const size_t kpad = round_up(k, cfg.kr);
  const size_t mc = m_block(cfg, k);
  const size_t pb = panel_bytes(cfg, kpad);
  int16_t* packed_a = reinterpret_cast<int16_t*>((reinterpret_cast<uintptr_t>(workspace) + kWorkspaceAlign - 1) &
                                                 ~uintptr_t{kWorkspaceAlign - 1});
  Qs16GemmRequant rq;
  const int32_t shift = args.c_unsigned ? -32768 : 0;
  rq.zero_point = args.c_zero_point + shift;
  rq.lo = static_cast<float>(args.qmin - args.c_zero_point);
  rq.hi = static_cast<float>(args.qmax - args.c_zero_point);
  rq.out_xor = args.c_unsigned ? 0x8000 : 0;
  int16_t* c_base = reinterpret_cast<int16_t*>(args.c);

  for (size_t mb = m0; mb < m1; mb += mc) {
    const size_t rows = m1 - mb < mc ? m1 - mb : mc;
    const size_t full = rows / mr * mr;
    const uint16_t* a = args.a + mb * args.a_row_stride;
    for (size_t i = 0; i < full; i += mr) {
      qs16_gemm_pack_a(mr, cfg.kr, mr, k, a + i * args.a_row_stride, args.a_row_stride, args.a_col_stride,
                       args.a_unsigned, packed_a + i * kpad);
    }
    for (size_t i = full; i < rows; ++i) {
      qs16_gemm_pack_a(1, cfg.kr, 1, k, a + i * args.a_row_stride, args.a_row_stride, args.a_col_stride,
                       args.a_unsigned, packed_a + i * kpad);
    }
    for (size_t j = n0; j < n1; j += nr) {
      const size_t nc = n1 - j < nr ? n1 - j : nr;
      const void* w = static_cast<const uint8_t*>(args.b_packed) + j / nr * pb;
      int16_t* c = c_base + mb * args.c_stride + j;
      for (size_t i = 0; i < full; i += mr) {
        cfg.ukernel(mr, nc, kpad, packed_a + i * kpad, w, c + i * args.c_stride, args.c_stride, rq);
      }
      for (size_t i = full; i < rows; ++i) {
        cfg.ukernel_1(1, nc, kpad, packed_a + i * kpad, w, c + i * args.c_stride, args.c_stride, rq);
      }
    }
  }
}

GemmTasks qs16_gemm_tasks(const Qs16GemmConfig& cfg, size_t m, size_t n, size_t k, size_t threads) {
  return gemm_tasks(cfg.mr, cfg.nr, m, n, k, threads);
}

void qs16_gemm_task(const Qs16GemmConfig& cfg, const Qs16GemmArgs& args, const GemmTasks& tasks, size_t index,
                    void* workspace) {
  size_t m0, m1, n0, n1;
  tasks.range(index, args.m, args.n, &m0, &m1, &n0, &n1);
  qs16_gemm(cfg, args, m0, m1, n0, n1, workspace);
}

}  // namespace nfuse::kernels
