// The W * X 16-bit-activation GEMM's configurations, packing and portable microkernel
// (qs16_wxgemm.h).
#include "kernels/qs16-gemm/qs16_wxgemm.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

namespace nfuse::kernels {
namespace {

constexpr size_t kMr = 8, kNr = 32, kKr = 2;

size_t round_up(size_t x, size_t y) { return (x + y - 1) / y * y; }

struct Configs {
  Qs16WxConfig scalar, avx512vnni;
  bool has_avx512vnni = false;
};

const Configs& configs() {
  static const Configs all = [] {
    Configs c;
    c.scalar.name = "wx_scalar_8x32c2";
    c.scalar.isa = Isa::kScalar;
    c.scalar.ukernel = qs16_wxgemm__scalar_8x32;
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
    c.avx512vnni.name = "wx_avx512vnni_8x32c2";
    c.avx512vnni.isa = Isa::kAvx512;
    c.avx512vnni.ukernel = qs16_wxgemm__avx512vnni_8x32;
    c.avx512vnni.unpack_order = true;
    const CpuFeatures& f = cpu_features();
    c.has_avx512vnni = isa_supported(Isa::kAvx512) && f.x86_avx512bw && f.x86_avx512vl && f.x86_avx512vnni;
#endif
    return c;
  }();
  return all;
}

size_t w_panel_bytes(size_t k) { return kQs16WxHeaderBytes + round_up(k, kKr) * kMr * sizeof(int16_t); }

}  // namespace

const Qs16WxConfig* qs16_wxgemm_config(Isa isa) {
  const Configs& c = configs();
  if (isa == Isa::kScalar) return &c.scalar;
  if (isa == Isa::kAvx512 && c.has_avx512vnni) return &c.avx512vnni;
  return nullptr;
}

std::vector<const Qs16WxConfig*> qs16_wxgemm_configs() {
  const Configs& c = configs();
  std::vector<const Qs16WxConfig*> out{&c.scalar};
  if (c.has_avx512vnni) out.push_back(&c.avx512vnni);
  return out;
}

size_t qs16_wxgemm_x_slot(const Qs16WxConfig& cfg, size_t j) {
  if (!cfg.unpack_order) return j;
  const size_t quad = j / 8, rem = j % 8;
  return rem < 4 ? 4 * quad + rem : 16 + 4 * quad + (rem - 4);
}

size_t qs16_wxgemm_packed_w_size(const Qs16WxConfig&, size_t m, size_t k) {
  return (m + kMr - 1) / kMr * w_panel_bytes(k);
}

void qs16_wxgemm_pack_w(const Qs16WxConfig&, size_t m, size_t k, const int8_t* w, const int32_t* bias,
                        const float* multiplier, int32_t x_zero_point, bool x_unsigned, void* packed) {
  const size_t kpad = round_up(k, kKr);
  const int64_t x_zp = x_zero_point - (x_unsigned ? 32768 : 0);  // in the int16 domain
  uint8_t* out = static_cast<uint8_t*>(packed);
  for (size_t i0 = 0; i0 < m; i0 += kMr) {
    std::memset(out, 0, kQs16WxHeaderBytes);
    int16_t* wp = reinterpret_cast<int16_t*>(out + kQs16WxHeaderBytes);
    int64_t max_abs_sum = 0;
    for (size_t r = 0; r < kMr; ++r) {
      const size_t i = i0 + r;
      int64_t row_sum = 0, abs_sum = 0;
      for (size_t kk = 0; kk < kpad; ++kk) {
        const int8_t v = i < m && kk < k ? w[i * k + kk] : int8_t{0};
        row_sum += v;
        abs_sum += std::abs(int64_t{v});
        wp[(kk / kKr * kMr + r) * kKr + kk % kKr] = v;
      }
      max_abs_sum = std::max(max_abs_sum, abs_sum);
      if (i >= m) continue;
      const int64_t bias_v = (bias != nullptr ? bias[i] : 0) - x_zp * row_sum;
      const float mult_v = multiplier != nullptr ? multiplier[i] : 1.0f;
      std::memcpy(out + r * sizeof(int64_t), &bias_v, sizeof bias_v);
      std::memcpy(out + kMr * sizeof(int64_t) + r * sizeof(float), &mult_v, sizeof mult_v);
    }
    // |x| <= 32768 in the int16 domain: a row whose sum of |w| is at most 65535 cannot leave int32.
    const uint32_t chunk_pairs = max_abs_sum <= 65535 ? static_cast<uint32_t>(std::max<size_t>(kpad / kKr, 1))
                                                      : static_cast<uint32_t>(kQs16GemmKChunk / kKr);
    std::memcpy(out + kMr * (sizeof(int64_t) + sizeof(float)), &chunk_pairs, sizeof chunk_pairs);
    out += w_panel_bytes(k);
  }
}

void qs16_wxgemm_pack_x(const Qs16WxConfig& cfg, size_t k, size_t cols, const uint16_t* x, size_t row_stride,
                        bool x_unsigned, int16_t* packed) {
  const uint16_t flip = x_unsigned ? 0x8000 : 0;
  const size_t groups = (k + kKr - 1) / kKr;
  for (size_t g = 0; g < groups; ++g) {
    int16_t* out = packed + g * kNr * kKr;
    for (size_t t = 0; t < kKr; ++t) {
      const size_t kk = g * kKr + t;
      const uint16_t* row = kk < k ? x + kk * row_stride : nullptr;
      for (size_t j = 0; j < kNr; ++j) {
        out[qs16_wxgemm_x_slot(cfg, j) * kKr + t] =
            row != nullptr && j < cols ? static_cast<int16_t>(row[j] ^ flip) : int16_t{0};
      }
    }
  }
}

void qs16_wxgemm_pack_x_runs(const Qs16WxConfig& cfg, size_t k, size_t cols, const uint16_t* base,
                             const size_t* row_offset, const Qs16WxRun* runs, size_t run_count, bool x_unsigned,
                             int16_t* packed) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (cfg.isa == Isa::kAvx512) {
    qs16_wxgemm_pack_x_runs__avx512(k, cols, base, row_offset, runs, run_count, x_unsigned, packed);
    return;
  }
#endif
  const uint16_t flip = x_unsigned ? 0x8000 : 0;
  const size_t groups = (k + kKr - 1) / kKr;
  std::memset(packed, 0, groups * kNr * kKr * sizeof(int16_t));
  for (size_t kk = 0; kk < k; ++kk) {
    int16_t* out = packed + kk / kKr * kNr * kKr + kk % kKr;
    for (size_t i = 0; i < run_count; ++i) {
      const uint16_t* src = base + row_offset[kk] + runs[i].src;
      for (size_t j = 0; j < runs[i].len; ++j)
        out[qs16_wxgemm_x_slot(cfg, runs[i].col + j) * kKr] = static_cast<int16_t>(src[j] ^ flip);
    }
  }
  (void)cols;
}

void qs16_wxgemm_pack_x_panels(const Qs16WxConfig& cfg, size_t k, const Qs16WxPanel* panels, size_t count,
                               const uint16_t* base, const size_t* row_offset, bool x_unsigned) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (cfg.isa == Isa::kAvx512) {
    qs16_wxgemm_pack_x_panels__avx512(k, panels, count, base, row_offset, x_unsigned);
    return;
  }
#endif
  for (size_t i = 0; i < count; ++i) {
    const Qs16WxPanel& p = panels[i];
    qs16_wxgemm_pack_x_runs(cfg, k, p.cols, base, row_offset, p.runs, p.run_count, x_unsigned, p.packed);
  }
}

Qs16GemmRequant qs16_requant(bool c_unsigned, int32_t c_zero_point, int32_t qmin, int32_t qmax) {
  Qs16GemmRequant rq;
  rq.zero_point = c_zero_point - (c_unsigned ? 32768 : 0);
  rq.lo = static_cast<float>(qmin - c_zero_point);
  rq.hi = static_cast<float>(qmax - c_zero_point);
  rq.out_xor = c_unsigned ? 0x8000 : 0;
  return rq;
}

void qs16_wxgemm__scalar_8x32(size_t mr, size_t nc, size_t kc, const void* w, const int16_t* x, uint16_t* c,
                              size_t c_stride, const Qs16GemmRequant& rq) {
  const uint8_t* wb = static_cast<const uint8_t*>(w);
  const int16_t* wq = reinterpret_cast<const int16_t*>(wb + kQs16WxHeaderBytes);
  int64_t acc[kMr][kNr];
  float mult[kMr];
  for (size_t r = 0; r < kMr; ++r) {
    int64_t bias;
    std::memcpy(&bias, wb + r * sizeof(int64_t), sizeof bias);
    for (size_t j = 0; j < kNr; ++j) acc[r][j] = bias;
  }
  std::memcpy(mult, wb + kMr * sizeof(int64_t), sizeof mult);
  for (size_t g = 0; g < kc / kKr; ++g)
    for (size_t r = 0; r < kMr; ++r)
      for (size_t j = 0; j < kNr; ++j)
        for (size_t t = 0; t < kKr; ++t) acc[r][j] += int64_t{wq[(g * kMr + r) * kKr + t]} * x[(g * kNr + j) * kKr + t];
  for (size_t r = 0; r < mr; ++r) {
    for (size_t j = 0; j < nc; ++j) {
      // qs16_gemm.h, "Exactness": f32(acc) through f64, one f32 multiply, clamp, round half to
      // even, zero point.
      float v = static_cast<float>(static_cast<double>(acc[r][j])) * mult[r];
      v = v < rq.lo ? rq.lo : v;
      v = v > rq.hi ? rq.hi : v;
      const int32_t q = static_cast<int32_t>(std::nearbyint(v)) + rq.zero_point;
      c[r * c_stride + j] = static_cast<uint16_t>(static_cast<uint32_t>(q) ^ rq.out_xor);
    }
  }
}

}  // namespace nfuse::kernels
