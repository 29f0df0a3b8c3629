// The W * X quantized GEMM's configurations, packing and portable microkernel (qu8_wxgemm.h).
#include "kernels/qu8-gemm/qu8_wxgemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
#include <emmintrin.h>  // SSE2: baseline x86-64, for the X panel interleave
#endif

namespace nfuse::kernels {
namespace {

constexpr size_t kMr = 8, kNr = 32, kKr = 4;

size_t round_up(size_t x, size_t y) { return (x + y - 1) / y * y; }

struct Configs {
  Qu8WxConfig scalar, avx512vnni;
  bool has_avx512vnni = false;
};

const Configs& configs() {
  static const Configs all = [] {
    Configs c;
    c.scalar.name = "wx_scalar_8x32";
    c.scalar.isa = Isa::kScalar;
    c.scalar.ukernel = qu8_wxgemm__scalar_8x32;
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
    c.avx512vnni.name = "wx_avx512vnni_8x32";
    c.avx512vnni.isa = Isa::kAvx512;
    c.avx512vnni.ukernel = qu8_wxgemm__avx512vnni_8x32;
    c.avx512vnni.quad_ukernel = qu8_wxgemm_quads__avx512vnni_8x32;
    const CpuFeatures& f = cpu_features();
    c.has_avx512vnni = isa_supported(Isa::kAvx512) && f.x86_avx512bw && f.x86_avx512vl && f.x86_avx512vnni;
#endif
    return c;
  }();
  return all;
}

// Columns [j0, j0 + n) of k-group `g` (rows r[0..3], already offset to column j0), generic.
void pack_group_scalar(const uint8_t* const r[4], size_t n, uint8_t flip, uint8_t* out) {
  for (size_t j = 0; j < n; ++j) {
    for (size_t t = 0; t < kKr; ++t) out[j * kKr + t] = r[t] != nullptr ? static_cast<uint8_t>(r[t][j] ^ flip) : 0;
  }
}

#if defined(__x86_64__)
// One k-group of 4 rows (r) of qu8_wxgemm_pack_x_runs, 16 columns at a time per run: a run's
// overshoot lands on the next run's columns (written after it) or on columns >= cols (zeroed
// after); past the panel's NR it goes through tmp. kFlip: s8 activations (sign bit flipped).
template <bool kFlip>
void pack_runs_sse(const uint8_t* const r[4], const Qu8WxRun* runs, size_t run_count, uint8_t* out) {
  const __m128i f = _mm_set1_epi8(static_cast<char>(0x80));
  auto load = [&](const uint8_t* p) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
    return kFlip ? _mm_xor_si128(v, f) : v;
  };
  for (size_t i = 0; i < run_count; ++i) {
    const Qu8WxRun run = runs[i];
    for (size_t b = 0; b < run.len; b += 16) {
      const size_t s = run.src + b, j = run.col + b;
      const __m128i r0 = load(r[0] + s), r1 = load(r[1] + s), r2 = load(r[2] + s), r3 = load(r[3] + s);
      const __m128i lo01 = _mm_unpacklo_epi8(r0, r1), lo23 = _mm_unpacklo_epi8(r2, r3);
      const __m128i hi01 = _mm_unpackhi_epi8(r0, r1), hi23 = _mm_unpackhi_epi8(r2, r3);
      alignas(16) uint8_t tmp[16 * kKr];
      uint8_t* d = j + 16 <= kNr ? out + j * kKr : tmp;
      __m128i* dst = reinterpret_cast<__m128i*>(d);
      _mm_storeu_si128(dst + 0, _mm_unpacklo_epi16(lo01, lo23));
      _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(lo01, lo23));
      _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(hi01, hi23));
      _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(hi01, hi23));
      if (d == tmp) std::memcpy(out + j * kKr, tmp, (kNr - j) * kKr);
    }
  }
}
#endif

}  // namespace

const Qu8WxConfig* qu8_wxgemm_config(Isa isa) {
  const Configs& c = configs();
  if (isa == Isa::kScalar) return &c.scalar;
  if (isa == Isa::kAvx512 && c.has_avx512vnni) return &c.avx512vnni;
  return nullptr;
}

std::vector<const Qu8WxConfig*> qu8_wxgemm_configs() {
  const Configs& c = configs();
  std::vector<const Qu8WxConfig*> out{&c.scalar};
  if (c.has_avx512vnni) out.push_back(&c.avx512vnni);
  return out;
}

size_t qu8_wxgemm_packed_w_size(const Qu8WxConfig& cfg, size_t m, size_t k) {
  return (m + cfg.mr - 1) / cfg.mr * (cfg.mr * sizeof(int32_t) + round_up(k, cfg.kr) * cfg.mr + cfg.mr * sizeof(float));
}

void qu8_wxgemm_pack_w(const Qu8WxConfig& cfg, size_t m, size_t k, const int8_t* w, const int32_t* bias,
                       const float* multiplier, int32_t x_zero_point, bool x_signed, void* packed) {
  // qu8_gemm_pack_b's panel layout with NR = MR, reading W as B^T (B[kk][i] = w[i * k + kk]).
  Qu8GemmConfig as_b;
  as_b.nr = cfg.mr;
  as_b.kr = cfg.kr;
  qu8_gemm_pack_b(as_b, k, m, w, 1, k, bias, multiplier, x_zero_point, x_signed, packed);
}

void qu8_wxgemm_set_row_params(const Qu8WxConfig& cfg, size_t m, size_t k, const int32_t* bias_prime,
                               const float* multiplier, void* packed) {
  const size_t panel = qu8_wxgemm_packed_w_size(cfg, cfg.mr, k);
  uint8_t* base = static_cast<uint8_t*>(packed);
  for (size_t i = 0; i < m; ++i) {
    uint8_t* p = base + i / cfg.mr * panel;
    const size_t r = i % cfg.mr;
    std::memcpy(p + r * sizeof(int32_t), bias_prime + i, sizeof(int32_t));
    std::memcpy(p + cfg.mr * sizeof(int32_t) + round_up(k, cfg.kr) * cfg.mr + r * sizeof(float), multiplier + i,
                sizeof(float));
  }
}

void qu8_wxgemm_panel_column_sums(const Qu8WxConfig& cfg, size_t kc, const uint8_t* panel, int32_t* sums) {
  (void)cfg;
  // A column's 4 bytes per K group are one 32-bit word: its even and odd bytes masked out are
  // two 16-bit sums each, added as whole words (a loop of 32-bit adds the compiler vectorises,
  // where byte-by-byte sums stay scalar). A 16-bit field holds 257 groups of 255: fold every 256.
  constexpr size_t kFold = 256;
  uint32_t total[kNr] = {};
  const size_t groups = kc / kKr;
  for (size_t g0 = 0; g0 < groups; g0 += kFold) {
    uint32_t even[kNr] = {}, odd[kNr] = {};
    for (size_t g = g0; g < std::min(groups, g0 + kFold); ++g) {
      const uint8_t* p = panel + g * kNr * kKr;
      for (size_t j = 0; j < kNr; ++j) {
        uint32_t word;
        std::memcpy(&word, p + j * kKr, sizeof word);
        even[j] += word & 0x00FF00FFu;
        odd[j] += (word >> 8) & 0x00FF00FFu;
      }
    }
    for (size_t j = 0; j < kNr; ++j)
      total[j] += (even[j] & 0xFFFFu) + (even[j] >> 16) + (odd[j] & 0xFFFFu) + (odd[j] >> 16);
  }
  for (size_t j = 0; j < kNr; ++j) sums[j] = static_cast<int32_t>(total[j]);
}

void qu8_wxgemm_pack_x(const Qu8WxConfig& cfg, size_t k, size_t cols, const uint8_t* x, size_t row_stride,
                       bool x_signed, uint8_t* packed) {
  (void)cfg;
  const uint8_t flip = x_signed ? 0x80 : 0;
  const size_t groups = (k + kKr - 1) / kKr;
  for (size_t g = 0; g < groups; ++g) {
    const uint8_t* r[4];
    for (size_t t = 0; t < kKr; ++t) r[t] = g * kKr + t < k ? x + (g * kKr + t) * row_stride : nullptr;
    uint8_t* out = packed + g * kNr * kKr;
    size_t j = 0;
#if defined(__x86_64__)
    if (r[3] != nullptr) {
      const __m128i f = _mm_set1_epi8(static_cast<char>(flip));
      for (; j + 16 <= cols; j += 16) {
        const __m128i r0 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[0] + j)), f);
        const __m128i r1 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[1] + j)), f);
        const __m128i r2 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[2] + j)), f);
        const __m128i r3 = _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(r[3] + j)), f);
        const __m128i lo01 = _mm_unpacklo_epi8(r0, r1), lo23 = _mm_unpacklo_epi8(r2, r3);
        const __m128i hi01 = _mm_unpackhi_epi8(r0, r1), hi23 = _mm_unpackhi_epi8(r2, r3);
        __m128i* dst = reinterpret_cast<__m128i*>(out + j * kKr);
        _mm_storeu_si128(dst + 0, _mm_unpacklo_epi16(lo01, lo23));
        _mm_storeu_si128(dst + 1, _mm_unpackhi_epi16(lo01, lo23));
        _mm_storeu_si128(dst + 2, _mm_unpacklo_epi16(hi01, hi23));
        _mm_storeu_si128(dst + 3, _mm_unpackhi_epi16(hi01, hi23));
      }
    }
#endif
    if (j < cols) {
      const uint8_t* rj[4];
      for (size_t t = 0; t < kKr; ++t) rj[t] = r[t] != nullptr ? r[t] + j : nullptr;
      pack_group_scalar(rj, cols - j, flip, out + j * kKr);
    }
    if (cols < kNr) std::memset(out + cols * kKr, 0, (kNr - cols) * kKr);
  }
}

void qu8_wxgemm_pack_x_runs(const Qu8WxConfig& cfg, size_t k, size_t cols, const uint8_t* base,
                            const size_t* row_offset, const Qu8WxRun* runs, size_t run_count, bool x_signed,
                            uint8_t* packed) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (cfg.isa == Isa::kAvx512) {
    qu8_wxgemm_pack_x_runs__avx512(k, cols, base, row_offset, runs, run_count, x_signed, packed);
    return;
  }
#endif
  (void)cfg;
  const uint8_t flip = x_signed ? 0x80 : 0;
  const size_t groups = (k + kKr - 1) / kKr;
  for (size_t g = 0; g < groups; ++g) {
    const uint8_t* r[4];
    for (size_t t = 0; t < kKr; ++t) r[t] = g * kKr + t < k ? base + row_offset[g * kKr + t] : nullptr;
    uint8_t* out = packed + g * kNr * kKr;
#if defined(__x86_64__)
    if (r[3] != nullptr) {
      if (flip != 0) {
        pack_runs_sse<true>(r, runs, run_count, out);
      } else {
        pack_runs_sse<false>(r, runs, run_count, out);
      }
      if (cols < kNr) std::memset(out + cols * kKr, 0, (kNr - cols) * kKr);
      continue;
    }
#endif
    for (size_t i = 0; i < run_count; ++i) {
      const uint8_t* rj[4];
      for (size_t t = 0; t < kKr; ++t) rj[t] = r[t] != nullptr ? r[t] + runs[i].src : nullptr;
      pack_group_scalar(rj, runs[i].len, flip, out + runs[i].col * kKr);
    }
    if (cols < kNr) std::memset(out + cols * kKr, 0, (kNr - cols) * kKr);
  }
}

Qu8GemmRequant qu8_requant(bool c_signed, int32_t c_zero_point, int32_t qmin, int32_t qmax) {
  Qu8GemmRequant rq;
  rq.zero_point = c_zero_point + (c_signed ? 128 : 0);
  rq.lo = static_cast<float>(qmin - c_zero_point);
  rq.hi = static_cast<float>(qmax - c_zero_point);
  rq.out_xor = c_signed ? 0x80u : 0u;
  return rq;
}

void qu8_wxgemm__scalar_8x32(size_t mr, size_t nc, size_t kc, const void* w, const uint8_t* x, uint8_t* c,
                             size_t c_stride, const Qu8GemmRequant& rq) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const int8_t* wq = reinterpret_cast<const int8_t*>(wb + kMr * sizeof(int32_t));
  uint32_t acc[kMr][kNr];  // wrapping int32 accumulation, as the SIMD kernel
  for (size_t r = 0; r < kMr; ++r) {
    int32_t bias;
    std::memcpy(&bias, wb + r * sizeof(int32_t), sizeof bias);
    for (size_t j = 0; j < kNr; ++j) acc[r][j] = static_cast<uint32_t>(bias);
  }
  for (size_t g = 0; g < kc / kKr; ++g) {
    for (size_t r = 0; r < kMr; ++r) {
      for (size_t j = 0; j < kNr; ++j) {
        for (size_t t = 0; t < kKr; ++t) {
          acc[r][j] += static_cast<uint32_t>(static_cast<int32_t>(wq[(g * kMr + r) * kKr + t]) *
                                             static_cast<int32_t>(x[(g * kNr + j) * kKr + t]));
        }
      }
    }
  }
  float mult[kMr];
  std::memcpy(mult, wb + kMr * sizeof(int32_t) + kc * kMr, sizeof mult);
  if (rq.f32_out) {
    float* y = reinterpret_cast<float*>(c);
    for (size_t r = 0; r < mr; ++r) {
      for (size_t j = 0; j < nc; ++j) {
        if (rq.row_factor) acc[r][j] += static_cast<uint32_t>(rq.row_factor[r]) * static_cast<uint32_t>(rq.col_term[j]);
        const float v = static_cast<float>(static_cast<int32_t>(acc[r][j])) * mult[r];
        float z = v + rq.row_bias[r];
        z = z < rq.lo ? rq.lo : z;
        y[r * c_stride + j] = z > rq.hi ? rq.hi : z;
      }
    }
    return;
  }
  for (size_t r = 0; r < mr; ++r) {
    for (size_t j = 0; j < nc; ++j) {
      // qu8_gemm.h, "Exactness": f32 product, clamp in f32, round half to even, + zero point.
      float v = static_cast<float>(static_cast<int32_t>(acc[r][j])) * mult[r];
      v = v < rq.lo ? rq.lo : v;
      v = v > rq.hi ? rq.hi : v;
      const int32_t q = static_cast<int32_t>(std::nearbyint(v)) + rq.zero_point;
      c[r * c_stride + j] = static_cast<uint8_t>(static_cast<uint32_t>(q) ^ rq.out_xor);
    }
  }
}

}  // namespace nfuse::kernels
