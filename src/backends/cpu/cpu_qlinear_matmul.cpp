// QLinearMatMul on the cpu backend: A (u8 or s8, [..., M, K], per-tensor scale and zero point)
// times a constant s8 B [K, N] with zero b_zp (per-tensor or per-column scale), on the qu8 GEMM
// (src/kernels/qu8-gemm/qu8_gemm.h): B packed once with the a_zp correction and the per-column
// multipliers (a_scale * b_scale[j]) / y_scale, all leading dims of A flattened into rows, C
// written straight into the [..., M, N] output. Bit-exact with the ref kernel (the GEMM computes
// kernels/quant_arithmetic.h's requantize_value over the exact int32 accumulator). Anything else (a
// non-constant B, u8 B, per-row A scales, b_zp != 0) returns nullptr and runs on ref.
#include <cmath>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "backends/pack_store.h"
#include "kernels/qu8-gemm/qu8_gemm.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::backends::cpu {
namespace {

const ir::Tensor* const_of(const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; }
bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }

class QLinearMatMul final : public CpuOp {
 public:
  QLinearMatMul(const ir::Node& node, size_t k, size_t n, bool a_signed, bool y_signed, int32_t y_zp)
      : node_(node), cfg_(kernels::qu8_gemm_config()), k_(k), n_(n), a_signed_(a_signed), y_signed_(y_signed),
        y_zp_(y_zp) {}

  // B through `packs` when given: the key names the kernel configuration and everything baked
  // into the panels (a's zero point and signedness, the multipliers).
  bool pack(const ir::Tensor& b, const std::vector<float>& mult, int32_t a_zp, PackStore* packs) {
    const size_t bytes = kernels::qu8_gemm_packed_b_size(cfg_, k_, n_);
    const std::string family = std::string("q8.matmul.gemm.") + cfg_.name;
    auto key = [&] {
      return pack_key(family.c_str(), *node_.input(3),
                      {k_, n_, static_cast<uint64_t>(a_zp), a_signed_ ? 1u : 0u, qconv_values_hash(nullptr, mult, n_)});
    };
    return pack_weights(
        packs, *node_.input(3), key, (bytes + sizeof(float) - 1) / sizeof(float), &packed_, [&](float* dst) {
          kernels::qu8_gemm_pack_b(cfg_, k_, n_, b.data<int8_t>(), n_, 1, nullptr, mult.data(), a_zp, a_signed_, dst);
        });
  }

  size_t scratch_floats(const OpTensors&, size_t) const override {
    return (kernels::qu8_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& a = *t.inputs[0];
    if (a.rank() < 2 || static_cast<size_t>(a.dim(a.rank() - 1)) != k_) {
      return invalid_model(node_.label() + ": A's last dim does not match B");
    }
    kernels::Qu8GemmArgs args;
    args.m = k_ ? static_cast<size_t>(a.numel()) / k_ : 0, args.n = n_, args.k = k_;
    args.a = static_cast<const uint8_t*>(a.raw()), args.a_row_stride = k_, args.a_col_stride = 1;
    args.a_signed = a_signed_;
    args.b_packed = packed_.data();
    args.c = t.outputs[0]->raw(), args.c_stride = n_;
    args.c_signed = y_signed_;
    args.c_zero_point = y_zp_;
    args.qmin = y_signed_ ? -128 : 0;
    args.qmax = y_signed_ ? 127 : 255;
    const kernels::Qu8GemmTasks tasks = kernels::qu8_gemm_tasks(cfg_, args.m, n_, k_, rc.pool.threads());
    rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
      kernels::qu8_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker));
    });
    return ok_status();
  }

 private:
  const ir::Node& node_;
  const kernels::Qu8GemmConfig& cfg_;
  size_t k_, n_;
  bool a_signed_, y_signed_;
  int32_t y_zp_;
  PackedFloats packed_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_qlinear_matmul(const ir::Node& node, const CompileContext& ctx) {
  auto none = [] { return std::unique_ptr<CpuOp>(); };
  if (ops::has_fused_epilogue(node) || node.num_inputs() != 8 || !node.input(0) ||
      node.input(0)->type.shape.rank() < 2) {
    return none();
  }
  const ir::Tensor* as = const_of(node.input(1));
  const ir::Tensor* az = const_of(node.input(2));
  const ir::Tensor* b = const_of(node.input(3));
  const ir::Tensor* bs = const_of(node.input(4));
  const ir::Tensor* bz = const_of(node.input(5));
  const ir::Tensor* ys = const_of(node.input(6));
  const ir::Tensor* yz = const_of(node.input(7));
  const ir::DType at = node.input(0)->type.dtype;
  if (!is_q8(at) || !as || !b || !bs || !ys || !yz || !is_q8(yz->dtype()) || yz->numel() != 1) return none();
  if ((node.input(2) && !az) || (node.input(5) && !bz)) return none();
  if (b->dtype() != ir::DType::kI8 || b->rank() != 2 || b->numel() == 0) return none();
  const int64_t k = b->dim(0), n = b->dim(1);
  if (as->dtype() != ir::DType::kF32 || as->numel() != 1 || ys->dtype() != ir::DType::kF32 || ys->numel() != 1 ||
      bs->dtype() != ir::DType::kF32 || (bs->numel() != 1 && bs->numel() != n) ||
      (az && (az->numel() != 1 || az->dtype() != at)))
    return none();
  if (bz) {
    if (bz->dtype() != ir::DType::kI8) return none();
    for (int64_t i = 0; i < bz->numel(); ++i)
      if (bz->get_int(i) != 0) return none();
  }
  // The GEMM's int32 accumulator is exact while K * 255 * 128 < 2^31 (ref accumulates in int64).
  if (k * 255 * 128 >= (int64_t{1} << 31)) return none();
  const float a_scale = as->data<float>()[0], y_scale = ys->data<float>()[0];
  std::vector<float> mult(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j) {
    float& m = mult[static_cast<size_t>(j)];
    m = nfuse::requant_multiplier(a_scale, bs->data<float>()[bs->numel() == 1 ? 0 : j], y_scale);
    if (!(m > 0.0f) || !std::isfinite(m)) return none();
  }
  auto op = std::make_unique<QLinearMatMul>(node, static_cast<size_t>(k), static_cast<size_t>(n), at == ir::DType::kI8,
                                            yz->dtype() == ir::DType::kI8, static_cast<int32_t>(yz->get_int(0)));
  if (!op->pack(*b, mult, az ? static_cast<int32_t>(az->get_int(0)) : 0, ctx.packs.get())) {
    return out_of_memory(node.label() + ": packed weights");
  }
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
