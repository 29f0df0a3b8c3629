#include "ops/op_helpers.h"

#include <algorithm>

namespace nfuse::ops {

Status infer_same_as_input0(ir::InferContext& ctx) {
  ctx.output(0) = ctx.input(0);
  return ok_status();
}

Result<ir::Shape> broadcast_shapes(const std::vector<const ir::Shape*>& shapes) {
  int rank = 0;
  for (const ir::Shape* s : shapes) {
    if (!s->rank_known()) return ir::Shape::unknown_rank();
    rank = std::max(rank, s->rank());
  }
  std::vector<ir::Dim> out(static_cast<size_t>(rank), ir::Dim(1));
  for (const ir::Shape* s : shapes) {
    const int offset = rank - s->rank();
    for (int i = 0; i < s->rank(); ++i) {
      ir::Dim& o = out[static_cast<size_t>(offset + i)];
      const ir::Dim& d = (*s)[i];
      if (d.is_static() && d.value == 1) continue;
      if (o.is_static() && o.value == 1) {
        o = d;
      } else if (d.is_static() && o.is_static()) {
        if (d.value != o.value) {
          return invalid_model("shapes cannot be broadcast: dim " + std::to_string(d.value) + " vs " +
                               std::to_string(o.value));
        }
      } else if (!d.is_static() && o.is_static()) {
        // o is a static size != 1: the symbolic dim must equal it (or be 1); keep the static one.
      } else if (d.is_static() && !o.is_static()) {
        o = d;
      } else if (!(d == o)) {
        o = ir::Dim();  // two different unknowns
      }
    }
  }
  return ir::Shape(std::move(out));
}

Status infer_broadcast(ir::InferContext& ctx) {
  std::vector<const ir::Shape*> shapes;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i)) shapes.push_back(&ctx.shape(i));
  auto shape = broadcast_shapes(shapes);
  if (!shape.ok()) return ctx.error(shape.status().message());
  ctx.output(0) = {ctx.dtype(0), std::move(shape).value()};
  return ok_status();
}

Status infer_broadcast_bool(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(infer_broadcast(ctx));
  ctx.output(0).dtype = ir::DType::kBool;
  return ok_status();
}

std::optional<int> normalize_axis(int64_t axis, int rank) {
  if (axis < -rank || axis >= rank) return std::nullopt;
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

std::optional<ir::DType> dtype_from_onnx(int64_t onnx_type) {
  switch (onnx_type) {
    case 1: return ir::DType::kF32;
    case 2: return ir::DType::kU8;
    case 3: return ir::DType::kI8;
    case 4: return ir::DType::kU16;
    case 5: return ir::DType::kI16;
    case 6: return ir::DType::kI32;
    case 7: return ir::DType::kI64;
    case 9: return ir::DType::kBool;
    case 10: return ir::DType::kF16;
    case 11: return ir::DType::kF64;
    case 12: return ir::DType::kU32;
    case 13: return ir::DType::kU64;
    case 16: return ir::DType::kBF16;
    default: return std::nullopt;
  }
}

Status check_same_dtype(const ir::InferContext& ctx, int first, int last) {
  for (int i = first; i <= last && i < ctx.num_inputs(); ++i) {
    if (ctx.has_input(i) && ctx.dtype(i) != ctx.dtype(0)) {
      return ctx.error("input " + std::to_string(i) + " is " + std::string(ir::dtype_name(ctx.dtype(i))) +
                       " but input 0 is " + std::string(ir::dtype_name(ctx.dtype(0))));
    }
  }
  return ok_status();
}

Result<ir::Shape> conv_output_shape(const ir::InferContext& ctx, int x, int w) {
  const ir::OpSchema* conv = ir::OpRegistry::global().find("Conv");
  if (!conv || !conv->infer) return ctx.error("the Conv schema is not registered");
  const ir::TensorType xf{ir::DType::kF32, ctx.shape(x)}, wf{ir::DType::kF32, ctx.shape(w)};
  ir::InferContext c{ctx.node, {&xf, &wf}, {nullptr, nullptr}, {}, {ir::TensorType{}}, {}};
  NFUSE_RETURN_IF_ERROR_PLAIN(conv->infer(c));
  return c.output(0).shape;
}

Status verify_as_conv(const ir::Node& node) {
  const ir::OpSchema* conv = ir::OpRegistry::global().find("Conv");
  return conv && conv->verify ? conv->verify(node) : ok_status();
}

}  // namespace nfuse::ops
