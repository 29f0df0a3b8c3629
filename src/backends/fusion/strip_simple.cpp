// Pools, element-wise activations and Add/Mul as fusion-group members. Pools call the cpu
// backend's row-range pooling on the sub-problem "output rows from y0" (input starting at the
// first row those windows read); the element-wise members work row by row, so a strip of them
// never leaves the cache.
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_pool_rows.h"
#include "backends/cpu/cpu_qlinear_ops.h"
#include "backends/fusion/strip_layer_impl.h"
#include "kernels/f32-vbinary/f32_vbinary.h"
#include "kernels/x8-lut/x8_lut.h"

namespace nfuse::backends::fusion {
namespace {

class StripPool final : public WindowedLayer {
 public:
  // dtype: f32 (MaxPool, AveragePool), u8 or i8 (MaxPool).
  StripPool(const ops::ConvGeometry& g, cpu::PoolKind kind, bool count_pad, ir::DType dtype)
      : WindowedLayer(g), kind_(kind), count_pad_(count_pad), dtype_(dtype) {
    if (dtype != ir::DType::kF32) in.elem = out.elem = 1;
  }

  size_t scratch_floats(size_t rows) const override {
    if (dtype_ == ir::DType::kF32) return 0;
    return (cpu::q8_maxpool_buffer_bytes(sub_problem(0, rows)) + sizeof(float) - 1) / sizeof(float);
  }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const RowRange need = input_rows(y0, y1);
    const cpu::PoolGeometry g = sub_problem(y0, y1);
    const size_t first = need.size() ? need.lo : x.base;
    for (size_t c = 0; c < out.c; ++c) {
      if (dtype_ == ir::DType::kU8) {
        cpu::q8_maxpool_rows(g, x.row<const uint8_t>(c, first), y.row<uint8_t>(c, y0), 0, y1 - y0,
                             reinterpret_cast<uint8_t*>(ws));
      } else if (dtype_ == ir::DType::kI8) {
        cpu::q8_maxpool_rows(g, x.row<const int8_t>(c, first), y.row<int8_t>(c, y0), 0, y1 - y0,
                             reinterpret_cast<int8_t*>(ws));
      } else {
        cpu::pool_rows(kind_, count_pad_, g, x.row(c, first), y.row(c, y0), 0, y1 - y0);
      }
    }
  }

 private:
  // Output rows [y0, y1) as a pooling of their own: output row 0 is y0, input row 0 the first
  // row those windows read.
  cpu::PoolGeometry sub_problem(size_t y0, size_t y1) const {
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
    return g;
  }

  cpu::PoolKind kind_;
  bool count_pad_;
  ir::DType dtype_;
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

Result<std::unique_ptr<StripLayer>> make_strip_pool(const ir::Node& node, const PlanView& type_of) {
  auto dims = type_of(node.input(0)).shape.static_dims();
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g, ops::resolve_pool(node.attrs, *dims));
  const bool max = node.op_type == "MaxPool";
  const bool count_pad = !max && node.attrs.get_int("count_include_pad", 0) != 0;
  return std::unique_ptr<StripLayer>(std::make_unique<StripPool>(
      g, max ? cpu::PoolKind::kMax : cpu::PoolKind::kAverage, count_pad, type_of(node.input(0)).dtype));
}

Result<std::unique_ptr<StripLayer>> make_strip_unary(const ir::Node& node, const PlanView& type_of) {
  ops::FusedActivation kind;
  std::vector<float> params;
  if (!unary_activation(node, &kind, &params)) return unsupported(node.label() + ": not an activation");
  auto layer = std::make_unique<StripUnary>(cpu::make_activation(kind, params));
  auto d = *type_of(node.input(0)).shape.static_dims();
  layer->in = layer->out = {static_cast<size_t>(d[1]), static_cast<size_t>(d[2]), static_cast<size_t>(d[3])};
  return std::unique_ptr<StripLayer>(std::move(layer));
}

Result<std::unique_ptr<StripLayer>> make_strip_binary(const ir::Node& node, const PlanView& type_of, int main_input) {
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
// chained part comes from the previous member's rows, the others from the arena. QLinearConcat's
// parts whose parameters differ from the output's go through their requantization table.
class StripConcat final : public StripLayer {
 public:
  struct Part {
    int external = -1;  // index into externals; -1: the chained input
    size_t channel0 = 0, channels = 0;
    int table = -1;     // index into tables; -1: a plain copy
  };
  std::vector<Part> parts;
  std::vector<cpu::QConcatInput> tables;

  void run(const RowView& x, const std::vector<RowView>& ext, const RowView& y, size_t y0, size_t y1,
           float*) const override {
    const size_t n = (y1 - y0) * out.w * out.elem;
    const kernels::X8LutFn lut = kernels::x8_lut_kernel(kernels::selected_isa());
    auto at = [&](const RowView& v, size_t c) {
      return static_cast<uint8_t*>(v.data) + (c * v.plane_stride + (y0 - v.base) * v.width) * out.elem;
    };
    for (const Part& p : parts) {
      const RowView& src = p.external < 0 ? x : ext[static_cast<size_t>(p.external)];
      for (size_t c = 0; c < p.channels; ++c) {
        if (p.table < 0) std::memcpy(at(y, p.channel0 + c), at(src, c), n);
        else lut(at(src, c), at(y, p.channel0 + c), n, tables[static_cast<size_t>(p.table)].table);
      }
    }
  }
};

}  // namespace

Result<std::unique_ptr<StripLayer>> make_strip_concat(const ir::Node& node, const PlanView& type_of, int main_input) {
  auto layer = std::make_unique<StripConcat>();
  const bool quantized = is_qlinear_concat(node);
  std::vector<cpu::QConcatInput> requant;
  if (quantized) {
    ir::DType t;
    if (std::string why = cpu::qlinear_concat_inputs(node, &t, &requant); !why.empty())
      return unsupported(node.label() + ": " + why);
  }
  const size_t elem = quantized ? 1 : sizeof(float);
  auto plane = [&](const ir::Value* v) {
    auto d = *type_of(v).shape.static_dims();
    return PlaneShape{static_cast<size_t>(d[1]), static_cast<size_t>(d[2]), static_cast<size_t>(d[3]), elem};
  };
  layer->out = plane(node.output(0));
  size_t channel0 = 0;
  const std::vector<int> parts = row_inputs(node);
  for (size_t i = 0; i < parts.size(); ++i) {
    const ir::Value* v = node.input(parts[i]);
    const PlaneShape s = plane(v);
    StripConcat::Part part{-1, channel0, s.c, -1};
    if (quantized && !requant[i].copy) {
      part.table = static_cast<int>(layer->tables.size());
      layer->tables.push_back(requant[i]);
    }
    if (parts[i] == main_input) {
      layer->in = s;
    } else {
      part.external = static_cast<int>(layer->externals.size());
      layer->externals.push_back(v);
      layer->external_kinds.push_back(StripLayer::Operand::kFull);
      layer->external_constant.push_back(false);
      layer->external_channels.push_back(s.c);
      if (quantized) layer->external_elem.push_back(1);
    }
    layer->parts.push_back(part);
    channel0 += s.c;
  }
  return std::unique_ptr<StripLayer>(std::move(layer));
}

}  // namespace nfuse::backends::fusion
