// Reshape, Flatten, Squeeze and Unsqueeze: ops that change dims but never the data order.
// Their ref kernel is a plain copy; everything interesting is shape inference here.
#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"
#include "ops/tensor_params.h"

namespace nfuse::ops {
namespace {

// Product of dims [b, e): static when all are static, the dim itself when it is the only
// non-1 dim (keeps a symbolic batch through Flatten), unknown otherwise.
ir::Dim product_dim(const std::vector<ir::Dim>& dims, int b, int e) {
  int64_t n = 1;
  const ir::Dim* only_dynamic = nullptr;
  int dynamic = 0;
  for (int i = b; i < e; ++i) {
    const ir::Dim& d = dims[static_cast<size_t>(i)];
    if (d.is_static()) {
      n *= d.value;
    } else {
      only_dynamic = &d;
      ++dynamic;
    }
  }
  if (dynamic == 0) return ir::Dim(n);
  if (dynamic == 1 && n == 1) return *only_dynamic;
  return ir::Dim();
}

Status verify_reshape(const ir::Node& node) {
  const int64_t allowzero = node.attrs.get_int("allowzero", 0);
  if (allowzero != 0 && allowzero != 1) return invalid_model(node.label() + ": allowzero must be 0 or 1");
  return ok_status();
}

// Resolves the one -1 entry of a Reshape target. Dims copied from the input (0 entries) and
// matching symbols cancel against input dims, so [batch, 12] -> [0, -1, 4] gives [batch, 3, 4].
ir::Dim infer_minus_one(const ir::Shape& in, const std::vector<ir::Dim>& out, const std::vector<int>& copied_from,
                        size_t minus_one, Status* error) {
  if (!in.rank_known()) return ir::Dim();
  std::vector<bool> used(static_cast<size_t>(in.rank()), false);
  int64_t out_prod = 1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (i == minus_one) continue;
    if (out[i].is_static()) {
      if (out[i].value > 0 && out_prod > kMaxElements / out[i].value) {
        *error = invalid_model("shape has more than 2^40 elements");
        return ir::Dim();
      }
      out_prod *= out[i].value;
      continue;
    }
    int match = copied_from[i];
    for (int k = 0; match < 0 && k < in.rank(); ++k) {
      if (!used[static_cast<size_t>(k)] && !out[i].symbol.empty() && in[k] == out[i]) match = k;
    }
    if (match < 0 || used[static_cast<size_t>(match)]) return ir::Dim();
    used[static_cast<size_t>(match)] = true;
  }
  int64_t in_prod = 1;
  for (int k = 0; k < in.rank(); ++k) {
    if (used[static_cast<size_t>(k)]) continue;
    if (!in[k].is_static()) return ir::Dim();
    if (in[k].value > 0 && in_prod > kMaxElements / in[k].value) {
      *error = invalid_model("input has more than 2^40 elements");
      return ir::Dim();
    }
    in_prod *= in[k].value;
  }
  if (out_prod == 0 || in_prod % out_prod != 0) {
    *error = invalid_model("cannot infer the -1 dim: " + std::to_string(in_prod) + " elements into parts of " +
                           std::to_string(out_prod));
    return ir::Dim();
  }
  return ir::Dim(in_prod / out_prod);
}

Status infer_reshape(ir::InferContext& ctx) {
  const ir::Shape& in = ctx.shape(0);
  const bool allowzero = ctx.attrs().get_int("allowzero", 0) == 1;
  ctx.output(0).dtype = ctx.dtype(0);
  auto target = ints_from_attr_or_input(ctx.attrs(), "shape", ctx.value(1));
  if (!target) {
    // Unknown target values: the rank still follows from the shape input's length.
    if (ctx.has_input(1) && ctx.shape(1).rank() == 1 && ctx.shape(1)[0].is_static() &&
        ctx.shape(1)[0].value <= 64) {
      ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>(static_cast<size_t>(ctx.shape(1)[0].value)));
    } else {
      ctx.output(0).shape = ir::Shape::unknown_rank();
    }
    return ok_status();
  }
  std::vector<ir::Dim> out;
  std::vector<int> copied_from(target->size(), -1);
  std::optional<size_t> minus_one;
  bool has_zero = false;
  for (size_t i = 0; i < target->size(); ++i) {
    const int64_t v = (*target)[i];
    if (v == 0 && !allowzero) {
      if (in.rank_known() && static_cast<int>(i) >= in.rank()) {
        return ctx.error("shape entry " + std::to_string(i) + " is 0 but the input has rank " +
                         std::to_string(in.rank()));
      }
      out.push_back(in.rank_known() ? in[static_cast<int>(i)] : ir::Dim());
      copied_from[i] = static_cast<int>(i);
    } else if (v == -1) {
      if (minus_one) return ctx.error("shape has more than one -1");
      minus_one = i;
      out.emplace_back();
    } else if (v < -1) {
      return ctx.error("shape entry " + std::to_string(v) + " is negative");
    } else {
      has_zero = has_zero || v == 0;
      out.emplace_back(v);
    }
  }
  if (minus_one) {
    if (has_zero) return ctx.error("shape has both -1 and 0 with allowzero=1");
    Status err;
    out[*minus_one] = infer_minus_one(in, out, copied_from, *minus_one, &err);
    if (!err.ok()) return ctx.error(err.message());
  }
  ir::Shape result(std::move(out));
  NFUSE_RETURN_IF_ERROR(check_shape(result), ctx.node.label());
  NFUSE_RETURN_IF_ERROR(check_shape(in), ctx.node.label());
  auto in_n = in.static_numel();
  auto out_n = result.static_numel();
  if (in_n && out_n && *in_n != *out_n) {
    return ctx.error("cannot reshape " + in.to_string() + " to " + result.to_string());
  }
  ctx.output(0).shape = std::move(result);
  return ok_status();
}

Status infer_flatten(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& in = ctx.shape(0);
  const int64_t axis = ctx.attrs().get_int("axis", 1);
  if (!in.rank_known()) {
    ctx.output(0).shape = ir::Shape({ir::Dim(), ir::Dim()});
    return ok_status();
  }
  const int r = in.rank();
  if (axis < -r || axis > r) return ctx.error(axis_error(axis, r));
  const int a = static_cast<int>(axis < 0 ? axis + r : axis);
  ctx.output(0).shape = ir::Shape({product_dim(in.dims(), 0, a), product_dim(in.dims(), a, r)});
  return ok_status();
}

Status infer_squeeze(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& in = ctx.shape(0);
  auto axes = ints_from_attr_or_input(ctx.attrs(), "axes", ctx.value(1));
  if (!in.rank_known() || (!axes && ctx.has_input(1))) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
    return ok_status();
  }
  std::vector<bool> drop(static_cast<size_t>(in.rank()), false);
  if (axes) {
    std::string err;
    auto norm = normalize_axes(*axes, in.rank(), &err);
    if (!norm) return ctx.error(err);
    for (int a : *norm) {
      if (in[a].is_static() && in[a].value != 1) {
        return ctx.error("cannot squeeze axis " + std::to_string(a) + " of size " + std::to_string(in[a].value));
      }
      drop[static_cast<size_t>(a)] = true;
    }
  } else {
    for (int i = 0; i < in.rank(); ++i) {
      // A dynamic dim may or may not be 1: the output rank is unknown until it is known.
      if (!in[i].is_static()) {
        ctx.output(0).shape = ir::Shape::unknown_rank();
        return ok_status();
      }
      drop[static_cast<size_t>(i)] = in[i].value == 1;
    }
  }
  std::vector<ir::Dim> out;
  for (int i = 0; i < in.rank(); ++i)
    if (!drop[static_cast<size_t>(i)]) out.push_back(in[i]);
  ctx.output(0).shape = ir::Shape(std::move(out));
  return ok_status();
}

Status infer_unsqueeze(ir::InferContext& ctx) {
  ctx.output(0).dtype = ctx.dtype(0);
  const ir::Shape& in = ctx.shape(0);
  auto axes = ints_from_attr_or_input(ctx.attrs(), "axes", ctx.value(1));
  if (!axes && !ctx.has_input(1)) return ctx.error("Unsqueeze needs axes (attribute or input)");
  if (!in.rank_known() || !axes) {
    const bool n_known = ctx.has_input(1) && ctx.shape(1).rank() == 1 && ctx.shape(1)[0].is_static();
    if (in.rank_known() && n_known && ctx.shape(1)[0].value <= 64) {
      ctx.output(0).shape =
          ir::Shape(std::vector<ir::Dim>(static_cast<size_t>(in.rank() + ctx.shape(1)[0].value)));
    } else {
      ctx.output(0).shape = ir::Shape::unknown_rank();
    }
    return ok_status();
  }
  const int out_rank = in.rank() + static_cast<int>(axes->size());
  std::string err;
  auto norm = normalize_axes(*axes, out_rank, &err);
  if (!norm) return ctx.error(err);
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int a : *norm) inserted[static_cast<size_t>(a)] = true;
  std::vector<ir::Dim> out;
  int k = 0;
  for (int i = 0; i < out_rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? ir::Dim(1) : in[k++]);
  ctx.output(0).shape = ir::Shape(std::move(out));
  return ok_status();
}

}  // namespace

void register_reshape_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "Reshape", .max_inputs = 2, .verify = verify_reshape, .infer = infer_reshape});
  registry.add(ir::OpSchema{.op_type = "Flatten", .infer = infer_flatten});
  registry.add(ir::OpSchema{.op_type = "Squeeze", .max_inputs = 2, .infer = infer_squeeze});
  registry.add(ir::OpSchema{.op_type = "Unsqueeze", .max_inputs = 2, .infer = infer_unsqueeze});
}

}  // namespace nfuse::ops
