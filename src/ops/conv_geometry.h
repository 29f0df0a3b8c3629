// Window arithmetic shared by Conv, ConvTranspose and the pooling ops (and by every backend that
// implements them): attribute reading with defaults and hostile-value checks, and the output size
// and resolved pads of each spatial axis under every ONNX auto_pad mode and ceil_mode.
//
// Conventions (ONNX): `pads` is [x1_begin, x2_begin, ..., x1_end, x2_end, ...]; the effective
// (dilated) kernel is (k - 1) * d + 1; spatial axes are the input's axes 2.. (after N and C).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "ir/attributes.h"
#include "nfuse/status.h"
#include "ops/axis_list.h"

namespace nfuse::ops {

enum class AutoPad { kNotSet, kValid, kSameUpper, kSameLower };

// "NOTSET" (or empty), "VALID", "SAME_UPPER", "SAME_LOWER"; nullopt for anything else.
std::optional<AutoPad> parse_auto_pad(std::string_view s);

// Kernel sizes, strides, dilations and pads above this are rejected as hostile: they would
// overflow the int64 arithmetic below or ask for absurd allocations. Real models stay far below.
inline constexpr int64_t kMaxWindowAttr = int64_t{1} << 24;

// The window attributes of one node, defaults filled in and values checked.
struct WindowAttrs {
  AxisList kernel;     // >= 1 each
  AxisList strides;    // >= 1 each (default 1)
  AxisList dilations;  // >= 1 each (default 1)
  AxisList pads;       // 2 * rank entries >= 0 (default 0); used only when kNotSet
  AutoPad auto_pad = AutoPad::kNotSet;
  bool ceil_mode = false;

  int rank() const { return static_cast<int>(kernel.size()); }
  int64_t effective_kernel(int axis) const;  // (k - 1) * d + 1
};

// Reads kernel_shape, strides, dilations, pads, auto_pad and ceil_mode for `spatial_rank` axes.
// `weight_kernel` (Conv's weight spatial dims, when known) is used when kernel_shape is absent
// and must agree with it when present; pools pass nullopt and then kernel_shape is required.
// kInvalidModel naming the offending attribute otherwise.
Result<WindowAttrs> read_window_attrs(const ir::Attributes& attrs, int spatial_rank,
                                      const std::optional<AxisList>& weight_kernel);

// One resolved spatial axis: output size and the pads actually applied.
struct WindowAxis {
  int64_t out = 0;
  int64_t pad_begin = 0;
  int64_t pad_end = 0;
};

// Forward window ops (Conv, pools) on axis `axis` with input size `in`:
//   NOTSET: out = floor_or_ceil((in + pb + pe - ek) / s) + 1, with the explicit pads;
//           in ceil_mode a last window that would start inside the end padding is dropped
//           (PyTorch and ONNX >= 1.15 semantics; it never changes a floor-mode size).
//   VALID:  the same with zero pads.
//   SAME_*: out = ceil(in / s); total = max(0, (out - 1) * s + ek - in) split evenly, the odd
//           element at the end (SAME_UPPER) or at the beginning (SAME_LOWER).
// kInvalidModel when the padded input is shorter than the effective kernel.
Result<WindowAxis> forward_window_axis(const WindowAttrs& w, int axis, int64_t in);

// ConvTranspose attributes: the window plus output_padding and output_shape.
struct TransposeWindowAttrs {
  WindowAttrs window;
  AxisList output_padding;  // rank entries >= 0 (default 0)
  AxisList output_shape;    // rank entries >= 0, or empty when absent
};

// Reads ConvTranspose's attributes (output_shape may also list N and C first: they are dropped).
Result<TransposeWindowAttrs> read_transpose_window_attrs(const ir::Attributes& attrs, int spatial_rank,
                                                         const std::optional<AxisList>& weight_kernel);

// ConvTranspose on axis `axis` with input size `in`. With full = s * (in - 1) + output_padding + ek:
//   output_shape given: out = output_shape; total = max(0, full - out) split as below. An out
//           larger than full leaves the extra tail positions with only the bias (as ORT does).
//   SAME_*: out = in * s, total = max(0, full - out) split as below.
//   otherwise: out = full - pb - pe with the explicit pads (zero for VALID).
// The split follows the ONNX spec: SAME_UPPER puts total/2 at the beginning and the rest at the
// end; SAME_LOWER and NOTSET put the larger half at the beginning.
// An output position o receives input i through kernel tap k when o = i * s + k * d - pad_begin.
// kInvalidModel when the output would be empty or negative.
Result<WindowAxis> transpose_window_axis(const TransposeWindowAttrs& t, int axis, int64_t in);

}  // namespace nfuse::ops

namespace nfuse::ops {

// A Conv-like or pooling node (Conv, ConvInteger, QLinearConv, ConvTranspose, *Pool) resolved against concrete
// input dims: everything a kernel needs to loop. Spatial vectors have one entry per axis.
struct ConvGeometry {
  int64_t batch = 0;
  int64_t in_channels = 0;   // C of X
  int64_t out_channels = 0;  // C of Y
  int64_t group = 1;
  AxisList in, out, kernel, strides, dilations, pad_begin, pad_end;

  int rank() const { return static_cast<int>(in.size()); }
};

// Conv: X [N, C, in...], W [M, C/group, k...]. Checks ranks, channels and group; kInvalidModel.
Result<ConvGeometry> resolve_conv(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims,
                                  const std::vector<int64_t>& w_dims);
// ConvTranspose: X [N, C, in...], W [C, M/group, k...].
Result<ConvGeometry> resolve_conv_transpose(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims,
                                            const std::vector<int64_t>& w_dims);
// MaxPool, AveragePool, LpPool: X [N, C, in...]; in_channels = out_channels = group = C.
// Explicit pads must be smaller than the dilated kernel, so a window never lies wholly in the
// padding of an undilated kernel.
Result<ConvGeometry> resolve_pool(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims);
// MaxUnpool's default output dims [N, C, (in - 1) * s + k - pad_begin - pad_end ...] (the shape
// of the MaxPool input its indices refer to); kInvalidModel when a dim would not be positive.
Result<std::vector<int64_t>> max_unpool_default_dims(const ir::Attributes& attrs, const std::vector<int64_t>& x_dims);
// The window attributes of a pooling node with the pad check of resolve_pool.
Result<WindowAttrs> read_pool_window_attrs(const ir::Attributes& attrs, int spatial_rank);

}  // namespace nfuse::ops
