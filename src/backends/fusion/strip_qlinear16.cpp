// W8A16 members of fused groups (nfuse.QLinearConv16: i16 / u16 activations, s8 weights), bit-exact
// with the ref kernel as the cpu backend's op is, through the same code:
//   convolutions with several input channels per group on the qs16 GEMM (StripQConv16Gemm);
//   depthwise on the cpu backend's direct int64 loop over the strip's rows.
#include <algorithm>

#include "backends/cpu/cpu_qlinear_conv16_rows.h"
#include "backends/fusion/strip_layer_impl.h"

namespace nfuse::backends::fusion {
namespace {

constexpr size_t kProductBytes = 128 * 1024;  // one block of the [pixels x Co] product: L2-resident

// Any QLinearConv16 with more than one input channel per group, on the qs16 GEMM: a 1x1 stride-1
// unpadded one reads A (pixels x input channels) straight from the strip's input rows (column
// stride = the buffer's plane stride); any other (KxK, strides, pads, dilation, groups) first
// copies the strip's window to NHWC and builds its im2col rows, as the cpu op does for whole
// planes (cpu_qlinear_conv16_rows.h). The [pixels x Co] product is transposed into the output rows.
class StripQConv16Gemm final : public WindowedLayer {
 public:
  StripQConv16Gemm(const ops::ConvGeometry& g, cpu::W8A16Params p)
      : WindowedLayer(g), p_(std::move(p)), cfg_(kernels::qs16_gemm_config()) {
    geo_ = cpu::Conv2dGeometry{1,   in.c, in.h, in.w, out.c, out.h, out.w, static_cast<size_t>(g.group),
                               kh_, kw_,  sh_,  sw_,  dh_,   dw_,   pt_,   pl_};
    cin_g_ = in.c / geo_.group;
    cg_ = out.c / geo_.group;
    k_ = cin_g_ * kh_ * kw_;
    direct_ = kh_ * kw_ == 1 && sh_ == 1 && sw_ == 1 && pt_ == 0 && pl_ == 0 && geo_.group == 1 && out.h == in.h &&
              out.w == in.w;
  }
  bool init(const int32_t* bias, PackStore* packs, const ir::Value* weight) {
    return cpu::pack_qs16_conv_weights(cfg_, p_, bias, geo_.group, packs, weight, &packed_, &panel_bytes_);
  }

  // The product block, the GEMM's workspace, then (im2col) the window in NHWC and the im2col block.
  size_t scratch_floats(size_t rows) const override {
    const size_t block = block_pixels(rows * out.w);
    size_t bytes = product_bytes(block) + kernels::qs16_gemm_workspace_size(cfg_, k_) + 64;
    if (!direct_) bytes += window_bytes(rows) + block * k_ * sizeof(uint16_t) + 64;
    return (bytes + sizeof(float) - 1) / sizeof(float);
  }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const size_t np = (y1 - y0) * out.w, block = block_pixels(np);
    auto* base = reinterpret_cast<uint8_t*>(ws);
    auto* product = reinterpret_cast<uint16_t*>(base);
    void* gemm_ws = base + product_bytes(block);
    auto* nhwc = reinterpret_cast<uint16_t*>(base + product_bytes(block) + round64(kernels::qs16_gemm_workspace_size(cfg_, k_)));
    auto* cols = reinterpret_cast<uint16_t*>(reinterpret_cast<uint8_t*>(nhwc) + window_bytes(y1 - y0));
    const RowRange need = input_rows(y0, y1);
    for (size_t gi = 0; gi < geo_.group; ++gi) {
      const cpu::PlaneRowsOf<const uint16_t> planes{static_cast<const uint16_t*>(x.data) + gi * cin_g_ * x.plane_stride,
                                                    x.plane_stride, x.width, x.base};
      if (!direct_) cpu::nhwc16(planes, cin_g_, need.lo, 0, need.size() * in.w, nhwc);
      for (size_t q0 = 0; q0 < np; q0 += block) {
        const size_t nq = std::min(block, np - q0);
        kernels::Qs16GemmArgs a;
        a.m = nq, a.n = cg_, a.k = k_;
        if (direct_) {
          a.a = planes.row(0, y0) + q0, a.a_row_stride = 1, a.a_col_stride = x.plane_stride;
        } else {
          const size_t p0 = y0 * out.w + q0;
          cpu::im2col16(geo_, nhwc, need.lo, static_cast<uint16_t>(p_.x_zp), p0, p0 + nq, cols);
          a.a = cols, a.a_row_stride = k_, a.a_col_stride = 1;
        }
        cpu::set_qs16_quantization(p_, &a);
        a.b_packed = reinterpret_cast<const uint8_t*>(packed_.data()) + gi * panel_bytes_;
        a.c = product, a.c_stride = cg_;
        kernels::qs16_gemm(cfg_, a, 0, nq, 0, cg_, gemm_ws);
        for (size_t o = 0; o < cg_; ++o) {
          uint16_t* dst = y.row<uint16_t>(gi * cg_ + o, y0) + q0;
          for (size_t q = 0; q < nq; ++q) dst[q] = product[q * cg_ + o];
        }
      }
    }
  }

 private:
  static size_t round64(size_t b) { return (b + 63) / 64 * 64; }
  size_t block_pixels(size_t np) const {
    return std::max<size_t>(1, std::min(np, kProductBytes / (cg_ * sizeof(uint16_t))));
  }
  size_t product_bytes(size_t block) const { return round64(block * cg_ * sizeof(uint16_t)); }
  // One group's input rows for `rows` output rows, NHWC.
  size_t window_bytes(size_t rows) const {
    const size_t window = std::min(in.h, (rows - 1) * sh_ + (kh_ - 1) * dh_ + 1);
    return round64(window * in.w * cin_g_ * sizeof(uint16_t));
  }

  cpu::W8A16Params p_;
  const kernels::Qs16GemmConfig& cfg_;
  cpu::Conv2dGeometry geo_;
  size_t cin_g_ = 0, cg_ = 0, k_ = 0, panel_bytes_ = 0;
  bool direct_ = false;
  PackedFloats packed_;
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

Rejection qconv16_rejection(const ir::Node& node, const PlanView& type_of) {
  if (!node.input(0) || node.outputs.size() != 1 || !node.output(0))
    return reject(SupportReason::kUnsupportedOp, "QLinearConv16 operands");
  for (const ir::Value* v : {node.input(0), node.output(0)}) {
    const ir::TensorType& t = type_of(v);
    if (t.shape.rank_known() && t.shape.rank() != 4)
      return reject(SupportReason::kRank, "'" + v->name + "' has rank " + std::to_string(t.shape.rank()));
    if (!t.shape.is_static())
      return reject(SupportReason::kDynamicShape, "'" + v->name + "' is " + t.shape.to_string());
  }
  if (ops::has_fused_epilogue(node))
    return reject(SupportReason::kUnsupportedOp, "QLinearConv16 with a fused epilogue");
  auto p = cpu::read_w8a16_params(node, 0, type_of(node.input(0)).dtype);
  if (!p || p->w->rank() != 4)
    return reject(SupportReason::kUnsupportedOp, "QLinearConv16 without constant quantization and weights");
  const ir::Value* b = node.input(8);
  if (b && (!b->constant || b->constant->dtype() != ir::DType::kI32 || b->constant->numel() != p->w->dim(0)))
    return reject(SupportReason::kUnsupportedOp, "QLinearConv16 with a non-constant or non-int32 bias");
  auto g = ops::resolve_conv(node.attrs, *type_of(node.input(0)).shape.static_dims(), p->w->dims());
  if (!g.ok()) return reject(SupportReason::kUnsupportedOp, "QLinearConv16 geometry does not resolve");
  const bool depthwise = g->group > 1 && g->group == g->in_channels && p->w->dim(1) == 1;
  // The GEMM's int64 -> f32 conversion is exact for K <= 2^26 (qs16_gemm.h).
  if (!depthwise && p->w->numel() / p->w->dim(0) > (int64_t{1} << 26))
    return reject(SupportReason::kUnsupportedOp, "QLinearConv16 with K over 2^26");
  return {};
}

Result<std::unique_ptr<StripLayer>> make_strip_qconv16(const ir::Node& node, const PlanView& type_of,
                                                       PackStore* packs) {
  auto p = cpu::read_w8a16_params(node, 0, type_of(node.input(0)).dtype);
  if (!p) return unsupported(node.label() + ": QLinearConv16 parameters");
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g,
                         ops::resolve_conv(node.attrs, *type_of(node.input(0)).shape.static_dims(), p->w->dims()));
  std::unique_ptr<StripLayer> layer;
  if (g.group > 1 && g.group == g.in_channels && p->w->dim(1) == 1) {
    layer = std::make_unique<StripQDwConv16>(g, *p, qconv16_bias(node));
  } else {
    auto conv = std::make_unique<StripQConv16Gemm>(g, *p);
    if (!conv->init(qconv16_bias(node), packs, node.input(3))) return out_of_memory(node.label() + ": packed weights");
    layer = std::move(conv);
  }
  layer->in.elem = layer->out.elem = sizeof(uint16_t);
  return layer;
}

}  // namespace nfuse::backends::fusion
