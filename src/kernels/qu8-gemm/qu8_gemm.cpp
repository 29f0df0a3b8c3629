// The quantized GEMM's configurations, packing and driver (layouts and arithmetic: qu8_gemm.h).
//
// Loop nest (no K blocking: a microkernel call covers the whole K, so it can requantize at once
// and C never holds partial int32 sums):
//   for each N block (cfg.nc columns)              packed B slice shared by all M blocks
//     for each M block (mc rows): pack A            mc x kpad A block in half of L2
//       for each NR-wide B panel                    kpad x NR s8 panel (L1/L2)
//         for each MR-high A panel: ukernel         (then 1 x NR ukernel_1 per tail row)
#include "kernels/qu8-gemm/qu8_gemm.h"
#include "kernels/int_gemm_variants.h"

#include <cstring>

namespace nfuse::kernels {
namespace {

constexpr size_t kWorkspaceAlign = 64;

size_t div_up(size_t x, size_t y) { return (x + y - 1) / y; }
size_t round_up(size_t x, size_t y) { return div_up(x, y) * y; }

Qu8GemmConfig make(const char* name, Isa isa, size_t mr, size_t nr, size_t kr, size_t a_elem,
                   Qu8GemmUkernelFn ukernel, Qu8GemmUkernelFn ukernel_1) {
  const CpuFeatures& cpu = cpu_features();
  Qu8GemmConfig c;
  c.name = name;
  c.isa = isa;
  c.mr = mr;
  c.nr = nr;
  c.kr = kr;
  c.a_elem = a_elem;
  c.ukernel = ukernel;
  c.ukernel_1 = ukernel_1;
  // N block: a slice of packed B (about 1 byte per K per column) that fits half of this core's
  // L3 share for K = 1024; at least 8 panels, at most 4096 columns.
  size_t nc = cpu.l3_bytes / 2 / 1024 / nr * nr;
  nc = nc < 8 * nr ? 8 * nr : nc;
  c.nc = nc > 4096 ? 4096 / nr * nr : nc;
  return c;
}

// M block for K: the packed A block (mc x kpad x a_elem bytes) fills half of L2.
size_t m_block(const Qu8GemmConfig& cfg, size_t k) {
  const size_t row_bytes = round_up(k > 0 ? k : 1, cfg.kr) * cfg.a_elem;
  size_t mc = cpu_features().l2_bytes / 2 / row_bytes / cfg.mr * cfg.mr;
  mc = mc < cfg.mr ? cfg.mr : mc;
  return mc > 1024 ? 1024 / cfg.mr * cfg.mr : mc;
}

using Configs = IntGemmVariants<Qu8GemmConfig>;

const Configs& configs() {
  static const Configs all = [] {
    Configs c;
    c.scalar = make("scalar_4x4", Isa::kScalar, 4, 4, 1, 1, qu8_gemm__scalar_4x4, qu8_gemm__scalar_1x4);
#if defined(__x86_64__)
    c.avx2 = make("avx2_4x16c2", Isa::kAvx2Fma, 4, 16, 2, 2, qu8_gemm__avx2_4x16c2, qu8_gemm__avx2_1x16c2);
    c.has_avx2 = isa_supported(Isa::kAvx2Fma);
#endif
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
    c.avx512vnni = make("avx512vnni_8x32c4", Isa::kAvx512, 8, 32, 4, 1, qu8_gemm__avx512vnni_8x32c4,
                        qu8_gemm__avx512vnni_1x32c4);
    const CpuFeatures& f = cpu_features();
    c.has_avx512vnni = isa_supported(Isa::kAvx512) && f.x86_avx512bw && f.x86_avx512vl && f.x86_avx512vnni;
#endif
#if defined(__aarch64__)
    c.neon = make("neon_8x8", Isa::kNeon, 8, 8, 1, 2, qu8_gemm__neon_8x8, qu8_gemm__neon_1x8);
    c.has_neon = isa_supported(Isa::kNeon);
#endif
    return c;
  }();
  return all;
}

// Packs one panel of A; T is the packed element (u8, or u16 for the int16-pair AVX2 kernel).
template <typename T>
void pack_a_generic(size_t mr, size_t kr, size_t rows, size_t k, const uint8_t* a, size_t a_row_stride,
                    size_t a_col_stride, uint8_t flip, T* packed) {
  const size_t groups = div_up(k, kr);
  for (size_t g = 0; g < groups; ++g) {
    for (size_t r = 0; r < mr; ++r) {
      T* dst = packed + (g * mr + r) * kr;
      for (size_t t = 0; t < kr; ++t) {
        const size_t kk = g * kr + t;
        dst[t] = r < rows && kk < k ? static_cast<T>(a[r * a_row_stride + kk * a_col_stride] ^ flip) : T{0};
      }
    }
  }
}

// The hot case: all mr rows present, contiguous in K (NHWC / row-major A). Writes the panel in
// address order, reading mr row streams; one 32-bit store per row per K group. Returns the
// number of K columns packed (whole groups); the caller packs the rest.
size_t pack_a_rows_fast(size_t mr, size_t kr, size_t a_elem, size_t k, const uint8_t* a, size_t a_row_stride,
                        uint8_t flip, uint8_t* packed) {
  constexpr size_t kMaxMr = 16;
  if (mr > kMaxMr) return 0;
  const uint8_t* src[kMaxMr];
  for (size_t r = 0; r < mr; ++r) src[r] = a + r * a_row_stride;
  const size_t groups = k / kr;
  if (kr == 4 && a_elem == 1) {
    const uint32_t f = flip * 0x01010101u;
    for (size_t g = 0; g < groups; ++g) {
      for (size_t r = 0; r < mr; ++r) {
        uint32_t v;
        std::memcpy(&v, src[r] + g * 4, 4);
        v ^= f;
        std::memcpy(packed, &v, 4);
        packed += 4;
      }
    }
    return groups * 4;
  }
  if (kr == 2 && a_elem == 2) {
    for (size_t g = 0; g < groups; ++g) {
      for (size_t r = 0; r < mr; ++r) {
        const uint32_t v = static_cast<uint32_t>(src[r][g * 2] ^ flip) |
                           static_cast<uint32_t>(src[r][g * 2 + 1] ^ flip) << 16;
        std::memcpy(packed, &v, 4);  // two u16, little-endian
        packed += 4;
      }
    }
    return groups * 2;
  }
  if (kr == 1 && a_elem == 2) {
    uint16_t* dst = reinterpret_cast<uint16_t*>(packed);
    for (size_t g = 0; g < groups; ++g) {
      for (size_t r = 0; r < mr; ++r) {
        *dst++ = static_cast<uint16_t>(src[r][g] ^ flip);
      }
    }
    return groups;
  }
  if (kr == 1 && a_elem == 1) {
    for (size_t g = 0; g < groups; ++g) {
      for (size_t r = 0; r < mr; ++r) {
        *packed++ = static_cast<uint8_t>(src[r][g] ^ flip);
      }
    }
    return groups;
  }
  return 0;
}

}  // namespace

const Qu8GemmConfig* qu8_gemm_config(Isa isa) { return configs().for_isa(isa); }

const Qu8GemmConfig& qu8_gemm_config() { return configs().selected(); }

std::vector<const Qu8GemmConfig*> qu8_gemm_configs() { return configs().all(); }

size_t qu8_gemm_packed_b_size(const Qu8GemmConfig& cfg, size_t k, size_t n) {
  const size_t panel = cfg.nr * sizeof(int32_t) + round_up(k, cfg.kr) * cfg.nr + cfg.nr * sizeof(float);
  return div_up(n, cfg.nr) * panel;
}

void qu8_gemm_pack_b(const Qu8GemmConfig& cfg, size_t k, size_t n, const int8_t* b, size_t b_k_stride,
                     size_t b_n_stride, const int32_t* bias, const float* multiplier, int32_t a_zero_point,
                     bool a_signed, void* packed) {
  const size_t nr = cfg.nr;
  const size_t kr = cfg.kr;
  const size_t kpad = round_up(k, kr);
  const int64_t a_zp = a_zero_point + (a_signed ? 128 : 0);
  uint8_t* out = static_cast<uint8_t*>(packed);
  for (size_t j0 = 0; j0 < n; j0 += nr) {
    const size_t cols = n - j0 < nr ? n - j0 : nr;
    uint8_t* bias_dst = out;
    int8_t* w = reinterpret_cast<int8_t*>(out + nr * sizeof(int32_t));
    uint8_t* mult_dst = out + nr * sizeof(int32_t) + kpad * nr;
    for (size_t jj = 0; jj < nr; ++jj) {
      int64_t colsum = 0;
      for (size_t kk = 0; kk < kpad; ++kk) {
        int8_t v = 0;
        if (jj < cols && kk < k) {
          v = b[kk * b_k_stride + (j0 + jj) * b_n_stride];
        }
        colsum += v;
        w[(kk / kr * nr + jj) * kr + kk % kr] = v;
      }
      int32_t bias_v = 0;
      float mult_v = 0.0f;
      if (jj < cols) {
        const int64_t full = (bias != nullptr ? bias[j0 + jj] : 0) - a_zp * colsum;
        bias_v = static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(full)));  // mod 2^32
        mult_v = multiplier != nullptr ? multiplier[j0 + jj] : 1.0f;
      }
      std::memcpy(bias_dst + jj * sizeof(int32_t), &bias_v, sizeof bias_v);
      std::memcpy(mult_dst + jj * sizeof(float), &mult_v, sizeof mult_v);
    }
    out = mult_dst + nr * sizeof(float);
  }
}

void qu8_gemm_pack_a(size_t mr, size_t kr, size_t a_elem, size_t rows, size_t k, const uint8_t* a,
                     size_t a_row_stride, size_t a_col_stride, bool a_signed, void* packed) {
  const uint8_t flip = a_signed ? 0x80 : 0;
  uint8_t* out = static_cast<uint8_t*>(packed);
  size_t done = 0;  // K columns packed so far (a multiple of kr)
  if (a_col_stride == 1 && rows == mr) {
    done = pack_a_rows_fast(mr, kr, a_elem, k, a, a_row_stride, flip, out);
  }
  if (done == k) return;
  a += done * a_col_stride;
  out += done * mr * a_elem;
  if (a_elem == 2) {
    pack_a_generic(mr, kr, rows, k - done, a, a_row_stride, a_col_stride, flip, reinterpret_cast<uint16_t*>(out));
  } else {
    pack_a_generic(mr, kr, rows, k - done, a, a_row_stride, a_col_stride, flip, out);
  }
}

size_t qu8_gemm_workspace_size(const Qu8GemmConfig& cfg, size_t k) {
  return m_block(cfg, k) * round_up(k > 0 ? k : 1, cfg.kr) * cfg.a_elem + kWorkspaceAlign;
}

void qu8_gemm(const Qu8GemmConfig& cfg, const Qu8GemmArgs& args, size_t m0, size_t m1, size_t n0, size_t n1,
              void* workspace) {
  if (m0 >= m1 || n0 >= n1) {
    return;
  }
  const size_t mr = cfg.mr;
  const size_t nr = cfg.nr;
  const size_t k = args.k;
  const size_t kpad = round_up(k, cfg.kr);
  const size_t mc = m_block(cfg, k);
  const size_t panel_bytes = nr * sizeof(int32_t) + kpad * nr + nr * sizeof(float);
  const size_t a_row_bytes = kpad * cfg.a_elem;  // per row of a packed panel
  uint8_t* packed_a = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(workspace) + kWorkspaceAlign - 1) &
                                                 ~uintptr_t{kWorkspaceAlign - 1});
  Qu8GemmRequant rq;
  rq.int32_out = args.int32_out;
  if (!args.int32_out) {
    const int32_t shift = args.c_signed ? 128 : 0;
    rq.zero_point = args.c_zero_point + shift;
    rq.lo = static_cast<float>(args.qmin - args.c_zero_point);
    rq.hi = static_cast<float>(args.qmax - args.c_zero_point);
    rq.out_xor = args.c_signed ? 0x80u : 0u;
  }
  const size_t c_elem = args.int32_out ? sizeof(int32_t) : 1;
  uint8_t* c_base = static_cast<uint8_t*>(args.c);
  const size_t c_row_bytes = args.c_stride * c_elem;

  for (size_t nb = n0; nb < n1; nb += cfg.nc) {
    const size_t nb_end = n1 - nb < cfg.nc ? n1 : nb + cfg.nc;
    for (size_t mb = m0; mb < m1; mb += mc) {
      const size_t rows = m1 - mb < mc ? m1 - mb : mc;
      const size_t full = rows / mr * mr;
      const uint8_t* a = args.a + mb * args.a_row_stride;
      for (size_t i = 0; i < full; i += mr) {
        qu8_gemm_pack_a(mr, cfg.kr, cfg.a_elem, mr, k, a + i * args.a_row_stride, args.a_row_stride,
                        args.a_col_stride, args.a_signed, packed_a + i * a_row_bytes);
      }
      for (size_t i = full; i < rows; ++i) {
        qu8_gemm_pack_a(1, cfg.kr, cfg.a_elem, 1, k, a + i * args.a_row_stride, args.a_row_stride,
                        args.a_col_stride, args.a_signed, packed_a + i * a_row_bytes);
      }
      for (size_t j = nb; j < nb_end; j += nr) {
        const size_t nc = nb_end - j < nr ? nb_end - j : nr;
        const void* w = static_cast<const uint8_t*>(args.b_packed) + j / nr * panel_bytes;
        uint8_t* c = c_base + mb * c_row_bytes + j * c_elem;
        for (size_t i = 0; i < full; i += mr) {
          cfg.ukernel(mr, nc, kpad, packed_a + i * a_row_bytes, w, c + i * c_row_bytes, args.c_stride, rq);
        }
        for (size_t i = full; i < rows; ++i) {
          cfg.ukernel_1(1, nc, kpad, packed_a + i * a_row_bytes, w, c + i * c_row_bytes, args.c_stride, rq);
        }
      }
    }
  }
}

Qu8GemmTasks qu8_gemm_tasks(const Qu8GemmConfig& cfg, size_t m, size_t n, size_t k, size_t threads) {
  return gemm_tasks(cfg.mr, cfg.nr, m, n, k, threads);
}

void qu8_gemm_task(const Qu8GemmConfig& cfg, const Qu8GemmArgs& args, const Qu8GemmTasks& tasks, size_t index,
                   void* workspace) {
  size_t m0, m1, n0, n1;
  tasks.range(index, args.m, args.n, &m0, &m1, &n0, &n1);
  qu8_gemm(cfg, args, m0, m1, n0, n1, workspace);
}

}  // namespace nfuse::kernels
