// Pooling ops: MaxPool, AveragePool, LpPool and their Global* forms. Window arithmetic in
// conv_geometry.h.
#include "ops/builtin_ops.h"
#include "ops/conv_geometry.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status verify_pool(const ir::Node& node) {
  const std::string auto_pad = node.attrs.get_string("auto_pad", "NOTSET");
  if (!parse_auto_pad(auto_pad)) {
    return invalid_model(node.label() + ": attribute 'auto_pad' has unknown value '" + auto_pad + "'");
  }
  if (!node.attrs.has("kernel_shape")) return invalid_model(node.label() + ": attribute 'kernel_shape' is required");
  const int64_t storage_order = node.attrs.get_int("storage_order", 0);
  if (storage_order != 0 && storage_order != 1) {
    return invalid_model(node.label() + ": attribute 'storage_order' must be 0 or 1");
  }
  const int64_t count_include_pad = node.attrs.get_int("count_include_pad", 0);
  if (count_include_pad != 0 && count_include_pad != 1) {
    return invalid_model(node.label() + ": attribute 'count_include_pad' must be 0 or 1");
  }
  if (node.op_type == "LpPool" && node.attrs.get_int("p", 2) < 1) {
    return invalid_model(node.label() + ": attribute 'p' must be >= 1");
  }
  return ok_status();
}

// Output 0 (and MaxPool's i64 Indices output 1) of a windowed pool.
Status infer_pool(ir::InferContext& ctx) {
  const ir::DType t = ctx.dtype(0);
  const bool int8_ok = ctx.node.op_type == "MaxPool" && (t == ir::DType::kU8 || t == ir::DType::kI8);
  if (!ir::dtype_is_float(t) && !int8_ok) {
    return ctx.error("input dtype " + std::string(ir::dtype_name(t)) + " is not supported");
  }
  const ir::Shape& xs = ctx.shape(0);
  ir::Shape out = ir::Shape::unknown_rank();
  if (xs.rank_known()) {
    if (xs.rank() < 3) return ctx.error("input must have rank >= 3 (N, C, spatial...)");
    auto w = read_pool_window_attrs(ctx.attrs(), xs.rank() - 2);
    if (!w.ok()) return ctx.error(w.status().message());
    std::vector<ir::Dim> dims = {xs[0], xs[1]};
    for (int a = 0; a < xs.rank() - 2; ++a) {
      if (!xs[a + 2].is_static()) {
        dims.emplace_back();
        continue;
      }
      auto ax = forward_window_axis(*w, a, xs[a + 2].value);
      if (!ax.ok()) return ctx.error(ax.status().message());
      dims.emplace_back(ax->out);
    }
    out = ir::Shape(std::move(dims));
  }
  ctx.output(0) = {t, out};
  if (ctx.num_outputs() > 1) ctx.output(1) = {ir::DType::kI64, out};
  return ok_status();
}

Status infer_global_pool(ir::InferContext& ctx) {
  if (!ir::dtype_is_float(ctx.dtype(0))) return ctx.error("input must be a float type");
  const ir::Shape& xs = ctx.shape(0);
  if (!xs.rank_known()) {
    ctx.output(0) = {ctx.dtype(0), ir::Shape::unknown_rank()};
    return ok_status();
  }
  if (xs.rank() < 2) return ctx.error("input must have rank >= 2 (N, C, spatial...)");
  std::vector<ir::Dim> dims(static_cast<size_t>(xs.rank()), ir::Dim(1));
  dims[0] = xs[0];
  dims[1] = xs[1];
  ctx.output(0) = {ctx.dtype(0), ir::Shape(std::move(dims))};
  return ok_status();
}

Status verify_global_lp_pool(const ir::Node& node) {
  if (node.attrs.get_int("p", 2) < 1) return invalid_model(node.label() + ": attribute 'p' must be >= 1");
  return ok_status();
}

// MaxUnpool: X, I (i64 MaxPool indices, X's shape), optional output_shape (the full output dims).
Status infer_max_unpool(ir::InferContext& ctx) {
  if (!ir::dtype_is_float(ctx.dtype(0))) return ctx.error("input must be a float type");
  if (ctx.dtype(1) != ir::DType::kI64) return ctx.error("indices must be i64");
  const ir::Shape& xs = ctx.shape(0);
  if (!xs.rank_known()) {
    ctx.output(0) = {ctx.dtype(0), ir::Shape::unknown_rank()};
    return ok_status();
  }
  if (xs.rank() < 3) return ctx.error("input must have rank >= 3 (N, C, spatial...)");
  auto w = read_window_attrs(ctx.attrs(), xs.rank() - 2, std::nullopt);
  if (!w.ok()) return ctx.error(w.status().message());
  std::vector<ir::Dim> dims(static_cast<size_t>(xs.rank()));
  if (ctx.has_input(2)) {
    if (const ir::Tensor* shape = ctx.value(2)) {
      if (shape->numel() != xs.rank()) return ctx.error("output_shape must have one entry per input dim");
      for (int i = 0; i < xs.rank(); ++i) {
        const int64_t d = shape->get_int(i);
        if (d < 0 || d > (int64_t{1} << 40)) return ctx.error("output_shape has value " + std::to_string(d));
        dims[static_cast<size_t>(i)] = ir::Dim(d);
      }
    }
  } else if (auto xd = xs.static_dims()) {
    auto out = max_unpool_default_dims(ctx.attrs(), *xd);
    if (!out.ok()) return ctx.error(out.status().message());
    ctx.output(0) = {ctx.dtype(0), ir::Shape::from_dims(*out)};
    return ok_status();
  } else {
    dims[0] = xs[0];
    dims[1] = xs[1];
  }
  ctx.output(0) = {ctx.dtype(0), ir::Shape(std::move(dims))};
  return ok_status();
}

}  // namespace

void register_pool_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "MaxUnpool", .min_inputs = 2, .max_inputs = 3, .verify = verify_pool, .infer = infer_max_unpool});
  registry.add(ir::OpSchema{.op_type = "MaxPool", .max_outputs = 2, .verify = verify_pool, .infer = infer_pool});
  registry.add(ir::OpSchema{.op_type = "AveragePool", .verify = verify_pool, .infer = infer_pool});
  registry.add(ir::OpSchema{.op_type = "LpPool", .verify = verify_pool, .infer = infer_pool});
  registry.add(ir::OpSchema{.op_type = "GlobalAveragePool", .infer = infer_global_pool});
  registry.add(ir::OpSchema{.op_type = "GlobalMaxPool", .infer = infer_global_pool});
  registry.add(ir::OpSchema{.op_type = "GlobalLpPool", .verify = verify_global_lp_pool, .infer = infer_global_pool});
}

}  // namespace nfuse::ops
