// W8A16 members of fused groups (nfuse.QLinearConv16: i16 / u16 activations, s8 weights), bit-exact
// with the ref kernel as the cpu backend's op is, through the same code:
//   1x1 (stride 1, no padding, one group) on the qs16 GEMM, whose A operand (pixels x input
//     channels) is read straight from the strip's input rows (column stride = the buffer's plane
//     stride); the [pixels x Co] product is transposed into the output rows;
//   depthwise on the cpu backend's direct int64 loop over the strip's rows.
#include <algorithm>

#include "backends/cpu/cpu_qlinear_conv16_rows.h"
#include "backends/fusion/strip_layer_impl.h"

namespace nfuse::backends::fusion {
namespace {

constexpr size_t kProductBytes = 128 * 1024;  // one block of the [pixels x Co] product: L2-resident

class StripQConv16Pointwise final : public StripLayer {
 public:
  explicit StripQConv16Pointwise(cpu::W8A16Params p) : p_(std::move(p)), cfg_(kernels::qs16_gemm_config()) {}
  bool init(const int32_t* bias) {
    size_t panel_bytes = 0;  // one group: one panel set
    return cpu::pack_qs16_conv_weights(cfg_, p_, bias, 1, &packed_, &panel_bytes);
  }

  size_t scratch_floats(size_t rows) const override {
    const size_t bytes = block_pixels(rows * out.w) * out.c * sizeof(uint16_t) +
                         kernels::qs16_gemm_workspace_size(cfg_, in.c) + 64;
    return (bytes + sizeof(float) - 1) / sizeof(float);
  }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const size_t np = (y1 - y0) * out.w, block = block_pixels(np);
    auto* product = reinterpret_cast<uint16_t*>(ws);
    void* gemm_ws = reinterpret_cast<uint8_t*>(ws) + (block * out.c * sizeof(uint16_t) + 63) / 64 * 64;
    for (size_t q0 = 0; q0 < np; q0 += block) {
      const size_t nq = std::min(block, np - q0);
      kernels::Qs16GemmArgs a;
      a.m = nq, a.n = out.c, a.k = in.c;
      a.a = x.row<uint16_t>(0, y0) + q0, a.a_row_stride = 1, a.a_col_stride = x.plane_stride;
      cpu::set_qs16_quantization(p_, &a);
      a.b_packed = packed_.data();
      a.c = product, a.c_stride = out.c;
      kernels::qs16_gemm(cfg_, a, 0, nq, 0, out.c, gemm_ws);
      for (size_t o = 0; o < out.c; ++o) {
        uint16_t* dst = y.row<uint16_t>(o, y0) + q0;
        for (size_t q = 0; q < nq; ++q) dst[q] = product[q * out.c + o];
      }
    }
  }

 private:
  size_t block_pixels(size_t np) const {
    return std::max<size_t>(1, std::min(np, kProductBytes / (out.c * sizeof(uint16_t))));
  }

  cpu::W8A16Params p_;
  const kernels::Qs16GemmConfig& cfg_;
  cpu::AlignedFloats packed_;
};

class StripQDwConv16 final : public WindowedLayer {
 public:
  StripQDwConv16(const ops::ConvGeometry& g, cpu::W8A16Params p, const int32_t* bias)
      : WindowedLayer(g), p_(std::move(p)) {
    bias_.assign(out.c, 0);
    if (bias) std::copy(bias, bias + out.c, bias_.begin());
    geo_ = cpu::Conv2dGeometry{1, in.c, in.h, in.w, out.c, out.h, out.w, in.c, kh_, kw_, sh_, sw_, dh_, dw_, pt_, pl_};
  }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float*) const override {
    const size_t per_group = out.c / in.c;
    for (size_t m = 0; m < out.c; ++m) {
      const cpu::PlaneRowsOf<const uint16_t> xr{x.row<uint16_t>(m / per_group, x.base), 0, x.width, x.base};
      const cpu::PlaneRowsOf<uint16_t> yr{y.row<uint16_t>(m, y.base), 0, y.width, y.base};
      cpu::qlinear_dwconv16_rows(geo_, p_, bias_.data(), m, xr, yr, y0, y1);
    }
  }

 private:
  cpu::W8A16Params p_;
  std::vector<int64_t> bias_;
  cpu::Conv2dGeometry geo_;
};

const int32_t* qconv16_bias(const ir::Node& node) {
  const ir::Value* b = node.input(8);
  return b && b->constant ? b->constant->data<int32_t>() : nullptr;
}

}  // namespace

std::string qconv16_rejection(const ir::Node& node, const TypeOf& type_of) {
  if (!node.input(0) || node.outputs.size() != 1 || !node.output(0)) return "unsupported op: QLinearConv16 operands";
  for (const ir::Value* v : {node.input(0), node.output(0)}) {
    const ir::TensorType& t = type_of(v);
    if (t.shape.rank_known() && t.shape.rank() != 4)
      return "rank != 4: '" + v->name + "' has rank " + std::to_string(t.shape.rank());
    if (!t.shape.is_static()) return "dynamic shape: '" + v->name + "' is " + t.shape.to_string();
  }
  if (ops::has_fused_epilogue(node)) return "unsupported op: QLinearConv16 with a fused epilogue";
  auto p = cpu::read_w8a16_params(node, 0, type_of(node.input(0)).dtype);
  if (!p || p->w->rank() != 4) return "unsupported op: QLinearConv16 without constant quantization and weights";
  const ir::Value* b = node.input(8);
  if (b && (!b->constant || b->constant->dtype() != ir::DType::kI32 || b->constant->numel() != p->w->dim(0)))
    return "unsupported op: QLinearConv16 with a non-constant or non-int32 bias";
  auto g = ops::resolve_conv(node.attrs, *type_of(node.input(0)).shape.static_dims(), p->w->dims());
  if (!g.ok()) return "unsupported op: QLinearConv16 geometry does not resolve";
  const bool depthwise = g->group > 1 && g->group == g->in_channels && p->w->dim(1) == 1;
  const bool pointwise = g->group == 1 && g->kernel[0] * g->kernel[1] == 1 && g->strides[0] == 1 &&
                         g->strides[1] == 1 && g->pad_begin[0] == 0 && g->pad_begin[1] == 0 && g->out[0] == g->in[0] &&
                         g->out[1] == g->in[1];
  // The GEMM's int64 -> f32 conversion is exact for K <= 2^26 (qs16_gemm.h).
  if (pointwise && g->in_channels > (int64_t{1} << 26)) return "unsupported op: QLinearConv16 with K over 2^26";
  if (!depthwise && !pointwise)
    return "unsupported op: QLinearConv16 other than 1x1 stride 1 or depthwise in int16 strips";
  return "";
}

Result<std::unique_ptr<StripLayer>> make_strip_qconv16(const ir::Node& node, const TypeOf& type_of) {
  auto p = cpu::read_w8a16_params(node, 0, type_of(node.input(0)).dtype);
  if (!p) return unsupported(node.label() + ": QLinearConv16 parameters");
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g,
                         ops::resolve_conv(node.attrs, *type_of(node.input(0)).shape.static_dims(), p->w->dims()));
  std::unique_ptr<StripLayer> layer;
  if (g.group > 1) {
    layer = std::make_unique<StripQDwConv16>(g, *p, qconv16_bias(node));
  } else {
    auto pw = std::make_unique<StripQConv16Pointwise>(*p);
    if (!pw->init(qconv16_bias(node))) return out_of_memory(node.label() + ": packed weights");
    auto u = [](int64_t v) { return static_cast<size_t>(v); };
    pw->in = {u(g.in_channels), u(g.in[0]), u(g.in[1])};
    pw->out = {u(g.out_channels), u(g.out[0]), u(g.out[1])};
    layer = std::move(pw);
  }
  layer->in.elem = layer->out.elem = sizeof(uint16_t);
  return layer;
}

}  // namespace nfuse::backends::fusion
