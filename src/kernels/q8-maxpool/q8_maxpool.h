// Row steps of the separable 8-bit MaxPool on the cpu backend (backends/cpu/cpu_qlinear_pool.cpp):
// a vertical step (running maximum of the window's input rows into a row buffer) and a horizontal
// step (each output the maximum of kw buffer entries, dilation dw, stride sw). A maximum is exact,
// so every variant returns the same bytes.
//
// Microkernels (hot code: no allocation, no checks):
//   q{u,s}8_vmax__scalar / q{u,s}8_hmax__scalar   portable C++ (auto-vectorised where it can)
//   q{u,s}8_vmax__avx2 / q{u,s}8_hmax__avx2       vpmaxub / vpmaxsb on 32 bytes; the horizontal
//                                                 step for sw = 1 and sw = 2 (the stride-2 case
//                                                 takes the even bytes of two 32-byte window
//                                                 maxima with a word mask + vpackuswb), other
//                                                 strides scalar.
// The AVX-512 ISA uses the AVX2 kernels (byte max on zmm needs AVX-512BW; MaxPool is a few
// percent of a network).
//
// hmax reads buffer entries up to kQ8MaxPoolSlack bytes past the last one the outputs need
// ((ow - 1) * sw + (kw - 1) * dw); the caller allocates and initialises them (any value).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/cpu_features.h"

namespace nfuse::kernels {

inline constexpr size_t kQ8MaxPoolSlack = 64;

void qu8_vmax__scalar(uint8_t* acc, const uint8_t* row, size_t n);
void qs8_vmax__scalar(int8_t* acc, const int8_t* row, size_t n);
void qu8_hmax__scalar(const uint8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, uint8_t* out);
void qs8_hmax__scalar(const int8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, int8_t* out);
#if defined(__x86_64__)
void qu8_vmax__avx2(uint8_t* acc, const uint8_t* row, size_t n);
void qs8_vmax__avx2(int8_t* acc, const int8_t* row, size_t n);
void qu8_hmax__avx2(const uint8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, uint8_t* out);
void qs8_hmax__avx2(const int8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, int8_t* out);
#endif

struct Q8MaxPoolConfig {
  // acc[i] = max(acc[i], row[i]) for i < n.
  void (*u8_vmax)(uint8_t* acc, const uint8_t* row, size_t n) = nullptr;
  void (*s8_vmax)(int8_t* acc, const int8_t* row, size_t n) = nullptr;
  // out[o] = max over k < kw of buf[o * sw + k * dw], for o < ow (kw >= 1).
  void (*u8_hmax)(const uint8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, uint8_t* out) = nullptr;
  void (*s8_hmax)(const int8_t* buf, size_t ow, size_t kw, size_t sw, size_t dw, int8_t* out) = nullptr;
};

// The kernels for `isa` (scalar where `isa` has none compiled in); never null members.
const Q8MaxPoolConfig& q8_maxpool_config(Isa isa);

}  // namespace nfuse::kernels
