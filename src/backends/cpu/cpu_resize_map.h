// Resize's source-index maps, shared by the cpu Resize op (cpu_resize.cpp) and the fusion
// backend, which reads a nearest-upsampled operand through them instead of materialising it:
// per output row and column, the source index (nearest) or two indices and weights (linear),
// computed in double exactly as ref_resize.cpp does.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace nfuse::backends::cpu {

struct ResizeMode {
  enum class Ctm { kHalfPixel, kPytorchHalfPixel, kAlignCorners, kAsymmetric, kTfHalfPixelForNearest };
  enum class Nearest { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };
  bool linear = false;
  Ctm ctm = Ctm::kHalfPixel;
  Nearest nearest = Nearest::kRoundPreferFloor;
};

// Reads a Resize node's attributes into *mode; "" when the fast paths take them, else why not
// (a partition-report reason, starting "unsupported op").
std::string resize_mode(const ir::Node& node, ResizeMode* mode);

// Resize's inputs by index (opset >= 11).
inline constexpr int kResizeScalesInput = 2, kResizeSizesInput = 3;

// The per-axis scales as the reference measures them: out/in when the node gave sizes
// (by_sizes), else `scales`, which must be [1, 1, sh, sw] with sh, sw positive and finite.
// False when they are not (or `scales` is missing): the fast paths do not cover the node.
bool resize_plane_scales(bool by_sizes, const ir::Tensor* scales, const std::vector<int64_t>& in,
                         const std::vector<int64_t>& out, double* sh, double* sw);

// One axis: out_len source indices (nearest) or index pairs with weights (linear).
struct ResizeAxisMap {
  std::vector<int32_t> i0, i1;
  std::vector<float> w0, w1;
};

// `scale` as the reference measures it: out/in when the node gave sizes (by_sizes), else the
// given scale.
ResizeAxisMap resize_axis_map(const ResizeMode& mode, int64_t in_len, int64_t out_len, double scale, bool by_sizes);

}  // namespace nfuse::backends::cpu
