// Adaptive weight rounding (`nfuse quantize --weight-rounding adaptive`): instead of rounding
// every weight to its nearest int8 step, a layer's weights are rounded one input column at a
// time and each column's rounding error is pushed onto the columns not yet rounded, weighted
// by the layer input's second moments on the calibration set, so that the error of the layer's
// *output* is minimised rather than the error of each weight (the optimal-brain-quantization /
// GPTQ scheme; AdaRound learns the same up-or-down choice by gradient descent). The scales stay
// the per-channel absmax ones: only the integer values change, so every kernel and exporter
// reads the result as any other int8 weight.
//
// Per output channel o the loss is (w_o - q_o)^T H (w_o - q_o), H = E[x x^T] over the inputs
// one output element reads (a Conv's receptive-field patch, a Gemm / MatMul row). Columns are
// taken in descending H diagonal (the inputs with the most energy first) and H is damped by
// 1% of its mean diagonal, which keeps the inverse well conditioned with few samples.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "nfuse/status.h"

namespace nfuse::quant {

// What one output element of a weighted layer reads: a 2-D (or 1-D) Conv's receptive field in
// (c, ky, kx) order, the weight's own order; or the last axis of a Gemm / MatMul input.
struct GramGeometry {
  bool conv = false;
  int64_t groups = 1;
  int64_t k = 0;  // elements per output channel
  // conv only
  int64_t cin_g = 0, kh = 1, kw = 1, stride_h = 1, stride_w = 1, dil_h = 1, dil_w = 1;
  int64_t pad_t = 0, pad_l = 0, pad_b = 0, pad_r = 0;
};

// The geometry of `n` (Conv with explicit pads and a 3-D / 4-D constant weight; Gemm without
// transA; MatMul with a 2-D constant weight); kUnsupported for anything else (those layers
// keep nearest rounding).
Result<GramGeometry> gram_geometry(const ir::Node& n);

// Sum of x x^T over sampled positions, one k x k matrix per group (upper triangle kept).
struct LayerGram {
  GramGeometry geometry;
  std::vector<double> h;  // groups * k * k
  int64_t samples = 0;    // positions summed (per group)
  int64_t batches = 0;
};

// At most this many positions of one batch are summed (a regular lattice whose offset moves
// with each batch), and fewer for wide layers so that one batch costs at most
// kGramMacsPerBatch multiply-adds (but never fewer than kGramMinPositionsPerBatch positions):
// enough samples per k for a stable H at a bounded cost per calibration batch.
constexpr int64_t kGramPositionsPerBatch = 4096;
constexpr int64_t kGramMinPositionsPerBatch = 256;
constexpr int64_t kGramMacsPerBatch = int64_t{1} << 28;

// Adds the positions of `x` (the layer's f32 input: NCHW / NCW for Conv, [..., k] otherwise).
Status accumulate_gram(const ir::Tensor& x, LayerGram* gram);

// Rounds weight `w` (f32, per-channel `axis`, `scale` one entry per channel) adaptively on
// `gram`: `values` holds its nearest-rounded s8 values (quantize_weights_per_channel's, for these
// scales) and is refined in place, values staying in [-127, 127]. Returns the number of groups
// rounded adaptively; the others keep their nearest values (a group whose H cannot be factored
// or whose input was all zero, every group of a layer with k > kAdaptiveRoundingMaxK, whose
// factorisation would cost k^3, or with no samples).
constexpr int64_t kAdaptiveRoundingMaxK = 2048;
Result<int64_t> adaptive_round(const ir::Tensor& w, int axis, std::span<const float> scale, const LayerGram& gram,
                               ir::Tensor* values);

}  // namespace nfuse::quant
