// ConvTranspose as a fusion-group member: any range of output rows from the input rows under
// them, so the upsampled tensor (s*s times its input) exists only in the next member's line
// buffer. The upsampling kind whose taps do not overlap (kernel == stride, no padding) runs the
// cpu backend's UpsampleDeconv, which writes each output once; any other 2-D geometry runs
// RowDeconv (cpu_row_deconv.h), one GEMM per tap row over the input rows it brings into the strip.
#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_row_deconv.h"
#include "backends/cpu/cpu_upsample_deconv.h"
#include "backends/fusion/strip_layer_impl.h"

namespace nfuse::backends::fusion {
namespace {

template <typename Kernel>  // UpsampleDeconv or RowDeconv
class StripConvTranspose final : public StripLayer {
 public:
  explicit StripConvTranspose(const ops::ConvGeometry& g) {
    auto u = [](int64_t v) { return static_cast<size_t>(v); };
    in = {u(g.in_channels), u(g.in[0]), u(g.in[1])};
    out = {u(g.out_channels), u(g.out[0]), u(g.out[1])};
  }
  Kernel kernel;

  RowRange input_rows(size_t y0, size_t y1) const override {
    RowRange r;
    kernel.input_rows(y0, y1, &r.lo, &r.hi);
    return r;
  }
  size_t scratch_floats(size_t rows) const override { return kernel.scratch_floats(rows); }

  void run(const RowView& x, const std::vector<RowView>& ext, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    const cpu::ConstPlaneRows r = ext.empty() ? cpu::ConstPlaneRows{} : plane_rows<const float>(ext[0]);
    kernel.run(plane_rows<const float>(x), plane_rows<float>(y), ext.empty() ? nullptr : &r, y0, y1, ws);
  }
};

}  // namespace

Rejection conv_transpose_rejection(const ir::Node& node, const PlanView& type_of) {
  const ir::Value* w = node.input(1);
  if (!w || !w->constant || w->constant->dtype() != ir::DType::kF32 || w->constant->rank() != 4 ||
      w->constant->numel() == 0)
    return reject(SupportReason::kUnsupportedOp, "ConvTranspose with non-constant or empty weights");
  if (node.has_input(2) && (!node.input(2)->constant || node.input(2)->constant->dtype() != ir::DType::kF32))
    return reject(SupportReason::kUnsupportedOp, "ConvTranspose with a non-constant bias");
  auto e = ops::read_fused_epilogue(node);
  if (!e.ok()) return reject(SupportReason::kUnsupportedOp, e.status().message());
  if (e->bias) return reject(SupportReason::kUnsupportedOp, "ConvTranspose with an nfuse.bias epilogue");
  if (e->residual && (!type_of(e->residual).shape.is_static() ||
                      type_of(e->residual).shape != type_of(node.output(0)).shape))
    return reject(SupportReason::kUnsupportedOp, "ConvTranspose residual of another shape");
  auto g = ops::resolve_conv_transpose(node.attrs, *type_of(node.input(0)).shape.static_dims(), w->constant->dims());
  if (!g.ok() || g->rank() != 2)
    return reject(SupportReason::kUnsupportedOp, "ConvTranspose geometry does not resolve to 2-D");
  if (node.has_input(2) && node.input(2)->constant->numel() != g->out_channels)
    return reject(SupportReason::kUnsupportedOp, "ConvTranspose bias of " +
                                                     std::to_string(node.input(2)->constant->numel()) + " values for " +
                                                     std::to_string(g->out_channels) + " output channels");
  return {};
}

Result<std::unique_ptr<StripLayer>> make_strip_conv_transpose(const ir::Node& node, const PlanView& type_of,
                                                              PackStore* packs) {
  const ir::Tensor& w = *node.input(1)->constant;
  const ir::Tensor* bias = node.has_input(2) ? &*node.input(2)->constant : nullptr;
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g,
                         ops::resolve_conv_transpose(node.attrs, *type_of(node.input(0)).shape.static_dims(), w.dims()));
  NFUSE_ASSIGN_OR_RETURN(cpu::Epilogue e, cpu::read_epilogue(node));
  // A residual: make_strip_layer adds it as externals[0].
  auto make = [&](auto layer) -> Result<std::unique_ptr<StripLayer>> {
    if (!layer->kernel.init(g, w, bias, e.act, e.residual, packs, node.input(1)))
      return out_of_memory(node.label() + ": packed weights");
    return std::unique_ptr<StripLayer>(std::move(layer));
  };
  if (cpu::UpsampleDeconv::applies(g)) return make(std::make_unique<StripConvTranspose<cpu::UpsampleDeconv>>(g));
  return make(std::make_unique<StripConvTranspose<cpu::RowDeconv>>(g));
}

}  // namespace nfuse::backends::fusion
