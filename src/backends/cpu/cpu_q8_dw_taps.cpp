#include "backends/cpu/cpu_q8_dw_taps.h"

#include <cstring>

#include "kernels/qu8-dwconv/qu8_dwconv.h"

namespace nfuse::backends::cpu {

bool Q8DwTaps::pack(const ir::Value& weight, const ir::Tensor& w, PackStore* packs) {
  channels_ = w.rank() > 0 ? static_cast<size_t>(w.dim(0)) : 0;
  taps_ = channels_ ? static_cast<size_t>(w.numel()) / channels_ : 0;
  const size_t n = channels_ * taps_;
  const size_t floats = f32_floats() + (n + sizeof(float) - 1) / sizeof(float);
  auto fill = [&](float* dst) {
    const int8_t* src = w.data<int8_t>();
    for (size_t i = 0; i < n; ++i) dst[i] = static_cast<float>(src[i]);
    std::memcpy(dst + f32_floats(), src, n);
  };
  auto key = [&] { return pack_key("q8.dwconv.taps", weight, {channels_, taps_}); };
  return pack_weights(packs, weight, key, floats, &packed_, fill);
}

std::vector<Q8DwTaps::DirectColumn> Q8DwTaps::direct_columns(const int32_t* bias, int32_t x_zp_u8) const {
  std::vector<DirectColumn> out(channels_);
  for (size_t c = 0; c < channels_; ++c) {
    const int8_t* w = s8(c);
    int32_t wsum = 0;
    for (size_t k = 0; k < 9; ++k) wsum += w[k];
    for (size_t kx = 0; kx < 3; ++kx) out[c].w[kx] = kernels::qu8_dwconv_pack_column(w, kx);
    // Wrapping as the int32 accumulator does.
    out[c].bias =
        static_cast<int32_t>(static_cast<uint32_t>(bias ? bias[c] : 0) - static_cast<uint32_t>(x_zp_u8 * wsum));
  }
  return out;
}

}  // namespace nfuse::backends::cpu
