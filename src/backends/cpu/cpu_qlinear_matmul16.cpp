// nfuse.QLinearMatMul16 (W8A16, src/ops/qlinear16.cpp) on the cpu backend: A (i16 or u16,
// [..., M, K], per-tensor scale and zero point) times a constant s8 B [K, N] with zero b_zp
// (per-tensor or per-column scale), on the qs16 GEMM (src/kernels/qs16-gemm/qs16_gemm.h): B
// packed once with the a_zp correction and the multipliers, A's leading dims flattened into rows,
// C written straight into the [..., M, N] output. Bit-exact with the ref kernel. Anything else
// returns nullptr and runs on ref.
#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_qlinear16_util.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "backends/pack_store.h"
#include "kernels/qs16-gemm/qs16_gemm.h"

namespace nfuse::backends::cpu {
namespace {

class QLinearMatMul16 final : public CpuOp {
 public:
  QLinearMatMul16(const ir::Node& node, const W8A16Params& p)
      : node_(node), cfg_(kernels::qs16_gemm_config()), p_(p), k_(static_cast<size_t>(p.w->dim(0))),
        n_(static_cast<size_t>(p.w->dim(1))) {}

  // B through `packs` when given, keyed as cpu_qlinear_matmul.cpp keys its 8-bit panels.
  bool pack(PackStore* packs) {
    const size_t bytes = kernels::qs16_gemm_packed_b_size(cfg_, k_, n_);
    const std::string family = std::string("q16.matmul.gemm.") + cfg_.name;
    auto key = [&] {
      return pack_key(
          family.c_str(), *node_.input(3),
          {k_, n_, static_cast<uint64_t>(p_.x_zp), p_.x_unsigned ? 1u : 0u, qconv_values_hash(nullptr, p_.mult, n_)});
    };
    return pack_weights(packs, *node_.input(3), key, (bytes + sizeof(float) - 1) / sizeof(float), &packed_,
                        [&](float* dst) {
                          kernels::qs16_gemm_pack_b(cfg_, k_, n_, p_.w->data<int8_t>(), n_, 1, nullptr, p_.mult.data(),
                                                    p_.x_zp, p_.x_unsigned, dst);
                        });
  }

  size_t scratch_floats(const OpTensors&, size_t) const override {
    return (kernels::qs16_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& a = *t.inputs[0];
    if (a.rank() < 2 || static_cast<size_t>(a.dim(a.rank() - 1)) != k_) {
      return invalid_model(node_.label() + ": A's last dim does not match B");
    }
    kernels::Qs16GemmArgs args;
    args.m = static_cast<size_t>(a.numel()) / k_, args.n = n_, args.k = k_;
    args.a = static_cast<const uint16_t*>(a.raw()), args.a_row_stride = k_, args.a_col_stride = 1;
    set_qs16_quantization(p_, &args);
    args.b_packed = packed_.data();
    args.c = static_cast<uint16_t*>(t.outputs[0]->raw()), args.c_stride = n_;
    const kernels::GemmTasks tasks = kernels::qs16_gemm_tasks(cfg_, args.m, n_, k_, rc.pool.threads());
    rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
      kernels::qs16_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker));
    });
    return ok_status();
  }

 private:
  const ir::Node& node_;
  const kernels::Qs16GemmConfig& cfg_;
  W8A16Params p_;
  size_t k_, n_;
  PackedFloats packed_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_qlinear_matmul16(const ir::Node& node, const CompileContext& ctx) {
  if (ops::has_fused_epilogue(node) || node.num_inputs() != 8 || !node.input(0) ||
      node.input(0)->type.shape.rank() < 2) {
    return std::unique_ptr<CpuOp>();
  }
  auto p = read_w8a16_params(node, 1);
  // B 2-D; K <= 2^26 keeps the GEMM's int64 -> f32 conversion exact (qs16_gemm.h).
  if (!p || p->w->rank() != 2 || p->w->dim(0) > (int64_t{1} << 26)) return std::unique_ptr<CpuOp>();
  auto op = std::make_unique<QLinearMatMul16>(node, *p);
  if (!op->pack(ctx.packs.get())) return out_of_memory(node.label() + ": packed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
