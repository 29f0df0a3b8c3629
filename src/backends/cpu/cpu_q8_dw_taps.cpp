#include "backends/cpu/cpu_q8_dw_taps.h"

#include <cstring>

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

}  // namespace nfuse::backends::cpu
