// The taps of an int8 depthwise QLinearConv as its kernels read them: f32 copies for the exact
// f32 path (every product and partial sum an integer below 2^24) and the s8 taps the direct 3x3
// kernel's columns are built from, in one buffer packed through the PackStore, so that a context
// binary's copy is read in place and the canonical weight not at all. The cpu op and the fusion
// backend's depthwise member share the layout (and so the key).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/pack_store.h"
#include "core/aligned_storage.h"
#include "ir/graph.h"

namespace nfuse::backends::cpu {

class Q8DwTaps {
 public:
  // From weight `w` ([Co][1][kh][kw] s8, the constant of value `weight`); false when memory runs out.
  bool pack(const ir::Value& weight, const ir::Tensor& w, PackStore* packs);
  const float* f32(size_t channel) const { return packed_.data() + channel * taps_; }
  const int8_t* s8(size_t channel) const {
    return reinterpret_cast<const int8_t*>(packed_.data() + f32_floats()) + channel * taps_;
  }
  size_t taps() const { return taps_; }

  // A 3x3 channel's weights and bias as the direct u8 kernel takes them (qu8_dwconv.h): the
  // packed columns, and the bias with x's zero point folded in (x_zp_u8: the zero point as the
  // kernel reads bytes, s8 with its sign bit flipped). One per channel; needs taps() == 9.
  struct DirectColumn {
    int32_t w[3] = {};
    int32_t bias = 0;
  };
  std::vector<DirectColumn> direct_columns(const int32_t* bias, int32_t x_zp_u8) const;

 private:
  size_t f32_floats() const { return (channels_ * taps_ + 15) / 16 * 16; }
  size_t channels_ = 0, taps_ = 0;
  PackedFloats packed_;
};

}  // namespace nfuse::backends::cpu
