// MatMul with constant weights as a fusion-group member: X [N, C, H, W] times B [W, K] works row
// by row (output row (c, y) is input row (c, y) times B), so a strip's rows need only the same
// input rows. Each channel's rows of the strip are one GEMM (rows x W times W x K) on the cpu
// backend's f32 GEMM driver, B packed once; a fused bias along K (nfuse.bias) and the fused
// activation go with it. Gemm is two-dimensional and never a member (rank != 4).
#include "backends/cpu/cpu_conv_util.h"
#include "backends/fusion/strip_layer_impl.h"
#include "backends/pack_store.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::backends::fusion {
namespace {

class StripMatMul final : public StripLayer {
 public:
  StripMatMul(const ir::Tensor& b, const ir::Tensor* bias, cpu::Activation act)
      : cfg_(kernels::f32_gemm_config_for_rows(4)), act_(std::move(act)) {
    k_ = static_cast<size_t>(b.dim(0));
    n_ = static_cast<size_t>(b.dim(1));
    if (bias) bias_.assign(bias->data<float>(), bias->data<float>() + n_);
  }
  // B (the constant of `weight`) into the GEMM's panels, through `packs` when given; false when
  // memory runs out.
  bool pack(const ir::Value& weight, PackStore* packs) {
    auto key = [&] { return pack_key("f32.strip.matmul.pack_b", weight, {cfg_.nr, k_, n_}); };
    return pack_weights(
        packs, weight, key, kernels::f32_gemm_packed_b_size(k_, n_, cfg_.nr), &packed_,
        [&](float* dst) { kernels::f32_gemm_pack_b(cfg_, k_, n_, weight.constant->data<float>(), n_, 1, dst); });
  }

  size_t scratch_floats(size_t) const override {
    return (kernels::f32_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
  }

  void run(const RowView& x, const std::vector<RowView>&, const RowView& y, size_t y0, size_t y1,
           float* ws) const override {
    kernels::F32GemmArgs a;
    a.m = y1 - y0, a.n = n_, a.k = k_;
    a.a_row_stride = x.width, a.a_col_stride = 1;
    a.b_packed = packed_.data();
    a.c_stride = y.width;
    a.bias = bias_.empty() ? nullptr : bias_.data();
    a.min = act_.min;
    a.max = act_.max;
    for (size_t c = 0; c < out.c; ++c) {
      a.a = x.row(c, y0);
      a.c = y.row(c, y0);
      kernels::f32_gemm(cfg_, a, 0, a.m, 0, n_, ws);
      if (act_.needs_pass()) act_.apply(a.c, a.m * n_);  // the channel's rows are contiguous
    }
  }

 private:
  const kernels::F32GemmConfig& cfg_;
  cpu::Activation act_;
  size_t k_ = 0, n_ = 0;
  std::vector<float> bias_;
  PackedFloats packed_;
};

}  // namespace

Rejection matmul_rejection(const ir::Node& node, const PlanView& type_of) {
  const ir::Value* b = node.input(1);
  if (!b || !b->constant || b->constant->dtype() != ir::DType::kF32 || b->constant->rank() != 2 ||
      b->constant->numel() == 0)
    return reject(SupportReason::kUnsupportedOp, "MatMul without a constant 2-D f32 B");
  const auto x = *type_of(node.input(0)).shape.static_dims();
  if (x[3] != b->constant->dim(0))
    return reject(SupportReason::kUnsupportedOp, "MatMul whose B does not match X's last dim");
  auto e = ops::read_fused_epilogue(node);
  if (!e.ok()) return reject(SupportReason::kUnsupportedOp, e.status().message());
  if (e->residual) return reject(SupportReason::kUnsupportedOp, "MatMul with a fused residual");
  if (e->bias && (!e->bias->constant || e->bias->constant->dtype() != ir::DType::kF32 ||
                  e->bias->constant->numel() != b->constant->dim(1)))
    return reject(SupportReason::kUnsupportedOp, "MatMul with a bias that is not a constant row of K");
  return {};
}

Result<std::unique_ptr<StripLayer>> make_strip_matmul(const ir::Node& node, const PlanView& type_of, PackStore* packs) {
  NFUSE_ASSIGN_OR_RETURN(ops::FusedEpilogue e, ops::read_fused_epilogue(node));
  const ir::Tensor& b = *node.input(1)->constant;
  auto layer = std::make_unique<StripMatMul>(b, e.bias ? &*e.bias->constant : nullptr,
                                             cpu::make_activation(e));
  if (!layer->pack(*node.input(1), packs)) return out_of_memory(node.label() + ": packed weights");
  auto x = *type_of(node.input(0)).shape.static_dims();
  auto u = [](int64_t v) { return static_cast<size_t>(v); };
  layer->in = {u(x[1]), u(x[2]), u(x[3])};
  layer->out = {u(x[1]), u(x[2]), u(b.dim(1))};
  return std::unique_ptr<StripLayer>(std::move(layer));
}

}  // namespace nfuse::backends::fusion
