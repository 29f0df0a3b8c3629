// Helpers shared by the element-wise, reduction and softmax op schemas (and their ref kernels,
// which must resolve attributes exactly as the schema did).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ir/op_registry.h"

namespace nfuse::ops {

// Sets of dtypes as bit masks over ir::DType, for "input i must be one of" checks.
constexpr uint32_t dtype_bit(ir::DType t) { return 1u << static_cast<unsigned>(t); }
inline constexpr uint32_t kFloatDTypes = dtype_bit(ir::DType::kF32) | dtype_bit(ir::DType::kF16) |
                                         dtype_bit(ir::DType::kBF16) | dtype_bit(ir::DType::kF64);
inline constexpr uint32_t kUnsignedDTypes = dtype_bit(ir::DType::kU8) | dtype_bit(ir::DType::kU16) |
                                            dtype_bit(ir::DType::kU32) | dtype_bit(ir::DType::kU64);
inline constexpr uint32_t kSignedIntDTypes = dtype_bit(ir::DType::kI8) | dtype_bit(ir::DType::kI16) |
                                             dtype_bit(ir::DType::kI32) | dtype_bit(ir::DType::kI64);
inline constexpr uint32_t kIntDTypes = kUnsignedDTypes | kSignedIntDTypes;
inline constexpr uint32_t kNumericDTypes = kFloatDTypes | kIntDTypes;
inline constexpr uint32_t kSignedDTypes = kFloatDTypes | kSignedIntDTypes;
inline constexpr uint32_t kBoolDTypes = dtype_bit(ir::DType::kBool);
inline constexpr uint32_t kAllDTypes = kNumericDTypes | kBoolDTypes;

// kUnsupported naming the node when input i's dtype is known and not in `allowed`.
Status require_dtype(const ir::InferContext& ctx, int input, uint32_t allowed);

// Which axes a Reduce* node reduces, resolved from the `axes` input (when present) or
// attribute, `noop_with_empty_axes` and the input rank. Shared by infer and the ref kernel.
struct ReduceAxes {
  bool noop = false;          // empty axes with noop_with_empty_axes: output = input
  std::vector<bool> reduced;  // per input axis
  bool keepdims = true;
};
// `axes_value` is the axes input's tensor (nullptr when the node has none). kInvalidModel for
// an out-of-range or repeated axis.
Result<ReduceAxes> resolve_reduce_axes(const ir::Node& node, const ir::Tensor* axes_value, int rank);

// Softmax/LogSoftmax/Hardmax view of the input as [outer, n, inner] with the op reduced over n.
// Before opset 13 the input is coerced to 2-D at `axis` (default 1): inner = 1 and n is the
// product of dims[axis:]; from opset 13 n = dims[axis] (default axis -1).
struct SoftmaxGeometry {
  int64_t outer = 1;
  int64_t n = 1;
  int64_t inner = 1;
};
Result<SoftmaxGeometry> softmax_geometry(const ir::Node& node, const std::vector<int64_t>& dims);
// The same axis check without dims (infer with a known rank).
Status check_softmax_axis(const ir::Node& node, int rank);

// Opset < 7 binary ops broadcast B onto A only with broadcast=1, aligning B at `axis` (or at
// the trailing dims without one). Returns B's dims padded to A's rank with 1s; kInvalidModel
// when B does not fit. Opset >= 7 ops use numpy broadcasting and never call this.
Result<std::vector<int64_t>> legacy_broadcast_dims(const ir::Node& node, const std::vector<int64_t>& a,
                                                   const std::vector<int64_t>& b);
// True when the node uses the pre-opset-7 broadcast attribute.
bool uses_legacy_broadcast(const ir::Node& node);
// Output 0: input 0's dtype and the broadcast shape of inputs 0 and 1 (either rule).
Status infer_binary_broadcast(ir::InferContext& ctx);

}  // namespace nfuse::ops
