// Pools, element-wise activations and Add/Mul as fusion-group members. Pools call the cpu
// backend's row-range pooling on the sub-problem "output rows from y0" (input starting at the
// first row those windows read); the element-wise members work row by row, so a strip of them
// never leaves the cache.
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_pool_rows.h"
#include "backends/fusion/strip_layer_impl.h"
#include "kernels/f32-vbinary/f32_vbinary.h"

namespace nfuse::backends::fusion {
namespace {

class StripPool final : public WindowedLayer {
 public:
  StripPool(const ops::ConvGeometry& g, cpu::PoolKind kind, bool count_pad)
      : WindowedLayer(g), kind_(kind), count_pad_(count_pad) {}


  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float*) const override {
    const RowRange need = input_rows(y0, y1);
    cpu::PoolGeometry g;
    g.planes = 1;
    g.h = in.h - std::min(in.h, need.lo);
    g.w = in.w;
    g.ho = y1 - y0;
    g.wo = out.w;
    g.kh = kh_;
    g.kw = kw_;
    g.sh = sh_;
    g.sw = sw_;
    g.dh = dh_;
    g.dw = dw_;
    g.pad_top = pt_ > y0 * sh_ ? pt_ - y0 * sh_ : 0;
    g.pad_left = pl_;
    for (size_t c = 0; c < out.c; ++c) {
      cpu::pool_rows(kind_, count_pad_, g, need.size() ? x.row(c, need.lo) : x.row(c, x.base), y.row(c, y0), 0,
                     y1 - y0);
    }
  }

 private:
  cpu::PoolKind kind_;
  bool count_pad_;
};

class StripUnary final : public ElementwiseLayer {
 public:
  explicit StripUnary(cpu::Activation act) : act_(std::move(act)) {}

  void apply_channel(const void* x, void* y, size_t, size_t, size_t n, const std::vector<RowView>&) const override {
    if (x != y) std::memcpy(y, x, n * sizeof(float));
    cpu::add_residual_and_activate(static_cast<float*>(y), nullptr, n, act_);
  }

 private:
  cpu::Activation act_;
};

// y = x (+|*) e, e out-shaped, one value per channel (SE gates, per-channel scales) or a scalar.
class StripBinary final : public ElementwiseLayer {
 public:
  explicit StripBinary(bool add)
      : op_(add ? kernels::F32BinaryOp::kAdd : kernels::F32BinaryOp::kMul),
        kernels_(kernels::f32_vbinary_config(kernels::selected_isa())) {}

  void apply_channel(const void* xv, void* yv, size_t c, size_t y0, size_t n,
                     const std::vector<RowView>& ext) const override {
    const auto* x = static_cast<const float*>(xv);
    auto* y = static_cast<float*>(yv);
    const size_t op = static_cast<size_t>(op_);
    const Operand kind = external_kinds[0];
    if (kind != Operand::kFull) {
      const float b = static_cast<const float*>(ext[0].data)[kind == Operand::kScalar ? 0 : c * ext[0].plane_stride];
      kernels_.opc[op](x, b, y, n);
    } else {
      kernels_.op[op](x, ext[0].row(c, y0), y, n);
    }
  }

  bool affine(std::vector<float>* scale, std::vector<float>* shift) const override {
    if (!external_constant[0] || external_kinds[0] == Operand::kFull) return false;
    const ir::Tensor& t = *externals[0]->constant;
    scale->assign(out.c, 1.0f);
    shift->assign(out.c, 0.0f);
    for (size_t c = 0; c < out.c; ++c) {
      const float v = t.data<float>()[external_kinds[0] == Operand::kScalar ? 0 : c];
      (op_ == kernels::F32BinaryOp::kAdd ? (*shift)[c] : (*scale)[c]) = v;
    }
    return true;
  }

 private:
  kernels::F32BinaryOp op_;
  const kernels::F32VbinaryConfig& kernels_;
};

// y * scale[c] + shift[c]: a run of constant Mul / Add members folded into one pass.
class StripAffine final : public ElementwiseLayer {
 public:
  StripAffine(std::vector<float> scale, std::vector<float> shift)
      : scale_(std::move(scale)), shift_(std::move(shift)),
        affine_(kernels::f32_vbinary_config(kernels::selected_isa()).affine) {}

  void apply_channel(const void* x, void* y, size_t c, size_t, size_t n, const std::vector<RowView>&) const override {
    affine_(static_cast<const float*>(x), scale_[c], shift_[c], static_cast<float*>(y), n);
  }

  bool affine(std::vector<float>* scale, std::vector<float>* shift) const override {
    *scale = scale_;
    *shift = shift_;
    return true;
  }

 private:
  std::vector<float> scale_, shift_;
  kernels::F32VaffineFn affine_;
};

}  // namespace

std::unique_ptr<StripLayer> make_strip_affine(const PlaneShape& shape, std::vector<float> scale,
                                              std::vector<float> shift) {
  auto layer = std::make_unique<StripAffine>(std::move(scale), std::move(shift));
  layer->in = layer->out = shape;
  return layer;
}

Result<std::unique_ptr<StripLayer>> make_strip_pool(const ir::Node& node, const TypeOf& type_of) {
  auto dims = type_of(node.input(0)).shape.static_dims();
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_pool(node.attrs, *dims));
  const bool max = node.op_type == "MaxPool";
  const bool count_pad = !max && node.attrs.get_int("count_include_pad", 0) != 0;
  return std::unique_ptr<StripLayer>(
      std::make_unique<StripPool>(g, max ? cpu::PoolKind::kMax : cpu::PoolKind::kAverage, count_pad));
}

Result<std::unique_ptr<StripLayer>> make_strip_unary(const ir::Node& node, const TypeOf& type_of) {
  ops::FusedActivation kind;
  std::vector<float> params;
  if (!unary_activation(node, &kind, &params)) return unsupported(node.label() + ": not an activation");
  auto layer = std::make_unique<StripUnary>(cpu::make_activation(kind, params));
  auto d = *type_of(node.input(0)).shape.static_dims();
  layer->in = layer->out = {static_cast<size_t>(d[1]), static_cast<size_t>(d[2]), static_cast<size_t>(d[3])};
  return std::unique_ptr<StripLayer>(std::move(layer));
}

Result<std::unique_ptr<StripLayer>> make_strip_binary(const ir::Node& node, const TypeOf& type_of, int main_input) {
  auto layer = std::make_unique<StripBinary>(node.op_type == "Add");
  auto d = *type_of(node.output(0)).shape.static_dims();
  layer->in = layer->out = {static_cast<size_t>(d[1]), static_cast<size_t>(d[2]), static_cast<size_t>(d[3])};
  const ir::Value* other = node.input(main_input == 0 ? 1 : 0);
  layer->externals.push_back(other);
  StripLayer::Operand kind = StripLayer::Operand::kFull;
  if (!binary_operand_kind(d, *type_of(other).shape.static_dims(), &kind))
    return unsupported(node.label() + ": operand '" + other->name + "' does not broadcast per channel");
  layer->external_kinds.push_back(kind);
  layer->external_constant.push_back(other->constant.has_value());
  return std::unique_ptr<StripLayer>(std::move(layer));
}

namespace {

// Concat along channels: each strip copies the rows of every part into its channel range. The
// chained part comes from the previous member's rows, the others from the arena.
class StripConcat final : public StripLayer {
 public:
  struct Part {
    int external = -1;  // index into externals; -1: the chained input
    size_t channel0 = 0, channels = 0;
  };
  std::vector<Part> parts;

  void run(const RowView& x, const std::vector<RowView>& ext, const RowView& y, size_t y0, size_t y1,
           float*) const override {
    const size_t n = (y1 - y0) * out.w * sizeof(float);
    for (const Part& p : parts) {
      const RowView& src = p.external < 0 ? x : ext[static_cast<size_t>(p.external)];
      for (size_t c = 0; c < p.channels; ++c) std::memcpy(y.row(p.channel0 + c, y0), src.row(c, y0), n);
    }
  }
};

}  // namespace

std::unique_ptr<StripLayer> make_strip_concat(const ir::Node& node, const TypeOf& type_of, int main_input) {
  auto layer = std::make_unique<StripConcat>();
  auto plane = [&](const ir::Value* v) {
    auto d = *type_of(v).shape.static_dims();
    return PlaneShape{static_cast<size_t>(d[1]), static_cast<size_t>(d[2]), static_cast<size_t>(d[3])};
  };
  layer->out = plane(node.output(0));
  size_t channel0 = 0;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const ir::Value* v = node.inputs[i];
    const PlaneShape s = plane(v);
    StripConcat::Part part{-1, channel0, s.c};
    if (static_cast<int>(i) == main_input) {
      layer->in = s;
    } else {
      part.external = static_cast<int>(layer->externals.size());
      layer->externals.push_back(v);
      layer->external_kinds.push_back(StripLayer::Operand::kFull);
      layer->external_constant.push_back(false);
      layer->external_channels.push_back(s.c);
    }
    layer->parts.push_back(part);
    channel0 += s.c;
  }
  return layer;
}

}  // namespace nfuse::backends::fusion
