// Activation equalization (`nfuse quantize --equalize activations`): data-driven cross-layer
// scaling for per-tensor activations. One u8 scale serves every channel of an activation, so a
// channel whose values span 1% of the tensor's range keeps about 2 of its 8 bits; when the next
// layer is depthwise, that channel's output is computed from those 2 bits alone (no other
// channel averages the error out), and large depthwise weights amplify it.
//
// For A -> [act] -> B, with A a Conv whose output channel c only B reads, the activation between
// them positively homogeneous (none, Relu, LeakyRelu) and B a Conv in which every output
// channel reads a single input channel (depthwise, any channel multiplier), scaling A's output
// channel c by s_c > 0 (its weights and bias) and B's weights reading channel c by 1/s_c keeps
// the float function. Where a non-homogeneous element-wise region (hardswish, a learnable
// affine, sigmoid...) stands on one side, a per-channel Mul on the region's edge undoes the
// scale inside it: the region stays a function of each element and its channel, which int8 runs
// as one 256-entry table per channel (fuse_qdq_lookup), so the quantized tensors on its edges
// are equalized at no cost. With per-output-channel weight scales both rescalings cost the weights no
// precision (each weight row is quantized on its own scale), unlike cross-layer equalization of
// a dense B, where a column scaled down loses bits in every row it shares. s_c widens channel
// c's calibrated range [lo_c, hi_c] until it touches an end of the tensor's [L, H] (at most
// kMaxActivationScale), so every channel uses its bits; an end holding less than kEndMargin of
// the span may grow to that share (the step grows by at most that much, while channels with a
// small tail on that side gain up to the whole span).
// Runs on the float graph before calibration, from per-channel ranges of a float run over the
// calibration batches.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "nfuse/status.h"

namespace nfuse::quant {

inline constexpr float kMaxActivationScale = 1024.0f;
inline constexpr float kEndMargin = 0.2f;

// What sits on either side of the rescaled activation.
enum class PairKind {
  kConvToDepthwise,    // A -> [Relu | LeakyRelu] -> B depthwise: A's rows x s, B's rows / s
  kConvToLookup,       // A -> element-wise region (int8: a lookup): A's rows x s, then Mul(1 / s)
                       // opens the region, which becomes one table per channel
  kLookupToDepthwise,  // region -> B depthwise: Mul(s) closes the region, B's rows / s
};

struct ActivationPair {
  PairKind kind = PairKind::kConvToDepthwise;
  ir::Node* a = nullptr;  // the Conv before (kConvTo*)
  ir::Node* b = nullptr;  // the depthwise Conv after (k*ToDepthwise)
  std::string tensor;     // the activation that is rescaled (and quantized)
  int64_t channels = 0;
};

// The pairs of `g` (optimized, relinked) that the transform applies to; `lookup_roots` and
// `lookup_outputs`: the inputs and outputs of the element-wise regions the quantization plan
// runs as lookups.
std::vector<ActivationPair> activation_equalization_pairs(ir::Graph& g, const std::vector<std::string>& lookup_roots,
                                                          const std::vector<std::string>& lookup_outputs);

// Per-channel min / max of NC... float tensors (channel axis 1).
struct ChannelRanges {
  std::vector<float> lo, hi;
  Status update(const ir::Tensor& t);
};

// The per-channel scales for `r` (1 where a channel is empty or already reaches an end).
std::vector<float> activation_scales(const ChannelRanges& r);

// Rescales pair `p` by `scales` (one per channel of p.tensor); the number of channels whose
// scale is not 1. Inserts nodes at the end of `g`: topo_sort() it after the last pair.
Result<int> apply_activation_scales(ir::Graph& g, const ActivationPair& p, const std::vector<float>& scales);

struct ActivationEqualizeReport {
  int pairs = 0;     // pairs rescaled
  int channels = 0;  // channels with a scale other than 1
};

}  // namespace nfuse::quant
