// The constants of a QLinearConv as the integer kernels take them, read and checked in one
// place for the cpu backend's op (cpu_qlinear_conv.cpp) and the fusion backend's strip layers:
// constant scales, zero points, weights and bias; s8 weights with zero w_zp (per tensor or per
// output channel); per-tensor u8/s8 activations; |bias| + the largest sum of products below 2^31
// (the kernels accumulate in int32, ref in int64); multipliers x_scale * w_scale / y_scale in f32,
// finite and > 0, exactly as ref computes them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nfuse::backends::cpu {

struct QConvParams {
  size_t m = 0, k = 0;       // output channels, taps per output (C/group * kh * kw)
  std::vector<int32_t> bias; // [m], zeros when absent
  std::vector<float> mult;   // [m]
  int32_t x_zp = 0, y_zp = 0;
  bool x_signed = false, y_signed = false;
  int64_t group = 1;
};

// "" and *q filled when QLinearConv `node` (its input of dtype `x_dtype`) has what the integer
// kernels need; else why not, starting with the partition report's category ("dtype: ...",
// "unsupported op: ..."). The weight's bytes are not read: kernels pack from the weight tensor
// itself, so a context binary's canonical copy that a packed twin replaces stays unread.
std::string read_qconv_params(const ir::Node& node, ir::DType x_dtype, QConvParams* q);

// FNV-1a over the per-channel values packed beside the weights (bias, multipliers), for pack
// keys: two convolutions sharing a weight but not their scales or bias never share packed panels.
uint64_t qconv_values_hash(const int32_t* bias, const std::vector<float>& mult, size_t channels);

}  // namespace nfuse::backends::cpu
