// Signal processing: HannWindow, HammingWindow, BlackmanWindow, MelWeightMatrix, DFT and STFT.
// Complex tensors are real tensors with a trailing dim of 2 (real, imag); real inputs may have a
// trailing dim of 1. Window and mel-matrix sizes are input values: infer computes them when
// known and leaves the dims unknown otherwise.
#include "ops/signal.h"
#include "ops/builtin_ops.h"

#include <string>
#include <vector>

#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {

Result<int> dft_axis(const ir::Node& node, int rank, const ir::Tensor* axis_input) {
  int64_t axis = node.attrs.get_int("axis", 1);
  if (node.opset >= 20) {
    axis = -2;
    if (axis_input) {
      if (axis_input->numel() != 1) return invalid_model(node.label() + ": axis must be a scalar");
      axis = axis_input->get_int(0);
    }
  }
  auto a = normalize_axis(axis, rank);
  if (!a || *a == rank - 1) {
    return invalid_model(node.label() + ": axis " + std::to_string(axis) + " is out of range for rank " +
                         std::to_string(rank) + " (the last dim holds the complex parts)");
  }
  return *a;
}

namespace {

constexpr uint32_t kIndexDTypes = dtype_bit(ir::DType::kI32) | dtype_bit(ir::DType::kI64);

// A scalar integer input's value, when known.
Result<std::optional<int64_t>> scalar_input(const ir::InferContext& ctx, int i, const char* what) {
  const ir::Tensor* t = ctx.value(i);
  if (!t) return std::optional<int64_t>();
  if (t->numel() != 1) return ctx.error(std::string(what) + " must be a scalar");
  return std::optional<int64_t>(t->get_int(0));
}

Status verify_output_datatype(const ir::Node& node) {
  const int64_t code = node.attrs.get_int("output_datatype", 1);
  auto t = dtype_from_onnx(code);
  if (!t || *t == ir::DType::kBool) {
    return unsupported(node.label() + ": output_datatype " + std::to_string(code) + " is not supported");
  }
  return ok_status();
}

Status infer_window(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kIndexDTypes));
  ctx.output(0).dtype = *dtype_from_onnx(ctx.attrs().get_int("output_datatype", 1));
  NFUSE_ASSIGN_OR_RETURN(auto size, scalar_input(ctx, 0, "size"));
  if (size && (*size < 0 || *size > kMaxElements)) return ctx.error("size " + std::to_string(*size) + " is out of range");
  ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>{size ? ir::Dim(*size) : ir::Dim()});
  return ok_status();
}

Status infer_mel_weight_matrix(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kIndexDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kIndexDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 2, kIndexDTypes));
  ctx.output(0).dtype = *dtype_from_onnx(ctx.attrs().get_int("output_datatype", 1));
  NFUSE_ASSIGN_OR_RETURN(auto bins, scalar_input(ctx, 0, "num_mel_bins"));
  NFUSE_ASSIGN_OR_RETURN(auto dft_length, scalar_input(ctx, 1, "dft_length"));
  if (bins && (*bins < 0 || *bins > kMaxElements)) return ctx.error("num_mel_bins is out of range");
  if (dft_length && (*dft_length < 1 || *dft_length > kMaxElements)) return ctx.error("dft_length is out of range");
  if (bins && dft_length) NFUSE_RETURN_IF_ERROR(check_dims({*dft_length / 2 + 1, *bins}), ctx.node.label());
  ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>{dft_length ? ir::Dim(*dft_length / 2 + 1) : ir::Dim(),
                                                       bins ? ir::Dim(*bins) : ir::Dim()});
  return ok_status();
}

Status infer_dft(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kIndexDTypes));
  const ir::Shape& x = ctx.shape(0);
  ctx.output(0).dtype = ctx.dtype(0);
  const bool axis_unknown = ctx.node.opset >= 20 && ctx.has_input(2) && !ctx.value(2);
  if (!x.rank_known() || axis_unknown) {
    ctx.output(0).shape = x.rank_known() ? ir::Shape(std::vector<ir::Dim>(x.dims().size())) : ir::Shape::unknown_rank();
    return ok_status();
  }
  if (x.rank() < 2) return ctx.error("input must have rank >= 2 ([..., signal, 1 or 2])");
  const ir::Dim& parts = x[x.rank() - 1];
  if (parts.is_static() && parts.value != 1 && parts.value != 2) return ctx.error("the last dim must be 1 or 2");
  auto axis = dft_axis(ctx.node, x.rank(), ctx.node.opset >= 20 && ctx.has_input(2) ? ctx.value(2) : nullptr);
  if (!axis.ok()) return axis.status();
  ir::Dim length = x[*axis];
  if (ctx.has_input(1)) {
    NFUSE_ASSIGN_OR_RETURN(auto n, scalar_input(ctx, 1, "dft_length"));
    if (n && (*n < 1 || *n > kMaxElements)) return ctx.error("dft_length must be positive");
    length = n ? ir::Dim(*n) : ir::Dim();
  }
  const bool onesided = ctx.attrs().get_int("onesided", 0) != 0;
  ir::Shape out = x;
  out[*axis] = (onesided && length.is_static()) ? ir::Dim(length.value / 2 + 1) : onesided ? ir::Dim() : length;
  out[x.rank() - 1] = ir::Dim(2);
  ctx.output(0).shape = std::move(out);
  return ok_status();
}

Status infer_stft(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, kIndexDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 2, kFloatDTypes));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 3, kIndexDTypes));
  const ir::Shape& x = ctx.shape(0);
  if (x.rank_known() && x.rank() != 3) return ctx.error("signal must be [batch, length, 1 or 2]");
  NFUSE_ASSIGN_OR_RETURN(auto step, scalar_input(ctx, 1, "frame_step"));
  if (step && *step < 1) return ctx.error("frame_step must be positive");
  std::optional<int64_t> frame_length;
  if (ctx.has_input(3)) {
    NFUSE_ASSIGN_OR_RETURN(frame_length, scalar_input(ctx, 3, "frame_length"));
  } else if (ctx.has_input(2) && ctx.shape(2).rank_known() && ctx.shape(2).rank() == 1 && ctx.shape(2)[0].is_static()) {
    frame_length = ctx.shape(2)[0].value;
  } else if (!ctx.has_input(2) && x.rank_known() && x[1].is_static()) {
    frame_length = x[1].value;
  }
  if (frame_length && (*frame_length < 1 || *frame_length > kMaxElements)) return ctx.error("frame_length must be positive");
  std::vector<ir::Dim> dims(4);
  dims[3] = ir::Dim(2);
  if (x.rank_known()) {
    dims[0] = x[0];
    if (x[1].is_static() && step && frame_length) {
      if (x[1].value < *frame_length) return ctx.error("the signal is shorter than one frame");
      dims[1] = ir::Dim((x[1].value - *frame_length) / *step + 1);
    }
  }
  const bool onesided = ctx.attrs().get_int("onesided", 1) != 0;
  if (frame_length) dims[2] = ir::Dim(onesided ? *frame_length / 2 + 1 : *frame_length);
  ctx.output(0) = {ctx.dtype(0), ir::Shape(std::move(dims))};
  return ok_status();
}

}  // namespace

void register_signal_ops(ir::OpRegistry& registry) {
  for (const char* op : {"HannWindow", "HammingWindow", "BlackmanWindow"}) {
    registry.add(ir::OpSchema{.op_type = op, .verify = verify_output_datatype, .infer = infer_window});
  }
  registry.add(ir::OpSchema{.op_type = "MelWeightMatrix",
                            .min_inputs = 5,
                            .max_inputs = 5,
                            .verify = verify_output_datatype,
                            .infer = infer_mel_weight_matrix});
  registry.add(ir::OpSchema{.op_type = "DFT", .min_inputs = 1, .max_inputs = 3, .infer = infer_dft});
  registry.add(ir::OpSchema{.op_type = "STFT", .min_inputs = 2, .max_inputs = 4, .infer = infer_stft});
}

}  // namespace nfuse::ops
