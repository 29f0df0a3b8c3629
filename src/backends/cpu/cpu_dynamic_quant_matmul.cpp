// nfuse.DynamicQuantMatMul on the cpu backend (ONNX Runtime's dynamically quantized MatMul, fused
// by passes/fuse_dynamic_quant): per run, x's range gives its u8 scale and zero point
// (DynamicQuantizeLinear's arithmetic, kernels/quant_arithmetic.h), x is quantized by the
// QuantizeLinear vector kernel, the qu8 GEMM multiplies it by the prepacked weights into int32,
// and one float epilogue applies the zero points, the scales and the bias. Bit-exact with the ref
// kernel, which computes the unfused graph step by step.
//
// The GEMM multiplies u8 by s8 with the zero points folded at pack time, but x's zero point a is
// known only per run, and u8 weights do not fit s8. So the weights are packed as Bs = B - 128
// (u8) or B (s8) with no zero-point correction (cpu_dynamic_quant_channels.h), and with
// c_j = (128 or 0) - w_zp[j]:
//   sum_k (A_ik - a)(B_kj - w_zp[j]) = [sum_k A_ik Bs_kj - a colsum(Bs)_j] + c_j (rowsum(A)_i - K a)
// where the bracket's first term is the GEMM's int32 output; the rest is the epilogue's, exact in
// int64 and kept as int32 like MatMulInteger's output.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_dynamic_quant_channels.h"
#include "backends/cpu/cpu_op.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::backends::cpu {
namespace {

class DynamicQuantMatMul final : public CpuOp {
 public:
  DynamicQuantMatMul(const ir::Node& node, size_t k, size_t n, const ir::Tensor& w, const ir::Tensor& w_zp,
                     const ir::Tensor& w_scale, const ir::Tensor* bias)
      : node_(node),
        cfg_(kernels::qu8_gemm_config()),
        quantize_(kernels::f32_quantize_q8_select(kernels::selected_isa())),
        k_(k),
        n_(n),
        ch_(n, w.dtype() == ir::DType::kU8, w_zp, w_scale, bias),
        run_scale_(n) {}

  // Packs the weights (Bs) and their column sums, through `packs` when given; false when memory
  // runs out.
  bool prepare(PackStore* packs) {
    const ir::Value& weight = *node_.input(1);
    const size_t bytes = kernels::qu8_gemm_packed_b_size(cfg_, k_, n_);
    const std::string family = std::string("q8.dynmatmul.gemm.") + cfg_.name;
    auto key = [&] { return pack_key(family.c_str(), weight, {k_, n_}); };
    auto fill = [&](float* dst) {
      const std::vector<int8_t> bs = DynamicQuantChannels::shifted(*weight.constant);
      kernels::qu8_gemm_pack_b(cfg_, k_, n_, bs.data(), n_, 1, nullptr, nullptr, 0, false, dst);
    };
    return pack_weights(packs, weight, key, (bytes + sizeof(float) - 1) / sizeof(float), &packed_, fill) &&
           ch_.pack_colsums(weight, k_, 1, n_, packs);
  }

  size_t scratch_floats(const OpTensors&, size_t) const override {
    return (kernels::qu8_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    if (x.rank() < 2 || static_cast<size_t>(x.dims().back()) != k_) {
      return invalid_model(node_.label() + ": x's last dim does not match w");
    }
    const size_t total = static_cast<size_t>(x.numel());
    const size_t m = k_ ? total / k_ : 0;
    const float* xv = x.data<float>();
    if (xq_.size() * sizeof(float) < total || rowsum_.size() < m) {
      if (!xq_.resize((total + sizeof(float) - 1) / sizeof(float)))
        return out_of_memory(node_.label() + ": x quantized");
      rowsum_.resize(m);
    }
    auto* xq = reinterpret_cast<uint8_t*>(xq_.data());
    const DynamicQuantParams q = quantize_dynamic_input(xv, total, quantize_, rc.pool, xq);
    const int64_t a = q.zero_point;
    for (size_t i = 0; i < m && ch_.any_offset; ++i) {
      int64_t s = 0;
      for (size_t p = 0; p < k_; ++p) s += xq[i * k_ + p];
      rowsum_[i] = s - static_cast<int64_t>(k_) * a;
    }

    float* y = t.outputs[0]->data<float>();
    kernels::Qu8GemmArgs args;
    args.m = m, args.n = n_, args.k = k_;
    args.a = xq, args.a_row_stride = k_, args.a_col_stride = 1;
    args.b_packed = packed_.data();
    args.c = y, args.c_stride = n_;  // the int32 accumulators, converted in place below
    args.int32_out = true;
    const kernels::Qu8GemmTasks tasks = kernels::qu8_gemm_tasks(cfg_, m, n_, k_, rc.pool.threads());
    rc.pool.run(tasks.count(),
                [&](size_t i, size_t worker) { kernels::qu8_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker)); });

    float* s = run_scale_.data();  // x_scale * w_scale[j], as the graph's scale Mul computes it
    for (size_t j = 0; j < n_; ++j) s[j] = q.scale * ch_.scale[j];
    const size_t rows_per_task = std::max<size_t>(1, 16384 / std::max<size_t>(n_, 1));
    const size_t epilogue_tasks = (m + rows_per_task - 1) / rows_per_task;
    rc.pool.run(epilogue_tasks, [&](size_t task, size_t) {
      const size_t r1 = std::min(m, (task + 1) * rows_per_task);
      for (size_t i = task * rows_per_task; i < r1; ++i) {
        float* row = y + i * n_;
        int32_t acc;
        for (size_t j = 0; j < n_; ++j) {
          std::memcpy(&acc, row + j, sizeof(acc));
          int64_t v = int64_t{acc} - a * ch_.colsum(j);
          if (ch_.any_offset) v += ch_.offset[j] * rowsum_[i];
          row[j] = static_cast<float>(static_cast<int32_t>(v)) * s[j] + ch_.bias[j];
        }
      }
    });
    return ok_status();
  }

 private:
  const ir::Node& node_;
  const kernels::Qu8GemmConfig& cfg_;
  const kernels::F32QuantizeFn quantize_;
  size_t k_, n_;
  DynamicQuantChannels ch_;
  std::vector<float> run_scale_;
  PackedFloats packed_;
  AlignedFloats xq_;
  std::vector<int64_t> rowsum_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_dynamic_quant_matmul(const ir::Node& node, const CompileContext& ctx) {
  auto none = [] { return std::unique_ptr<CpuOp>(); };
  auto const_of = [](const ir::Value* v) { return v && v->constant ? &*v->constant : nullptr; };
  const ir::Tensor* w = const_of(node.input(1));
  const ir::Tensor* w_zp = const_of(node.input(2));
  const ir::Tensor* w_scale = const_of(node.input(3));
  const ir::Tensor* bias = const_of(node.input(4));
  if (!w || !w_zp || !w_scale || (node.input(4) && !bias) || w->rank() != 2) return none();
  if (w->dtype() != ir::DType::kU8 && w->dtype() != ir::DType::kI8) return none();
  const int64_t k = w->dim(0), n = w->dim(1);
  // Exact int32 accumulation (|(A - a)(B - b)| <= 255 * 255 per term); beyond, the ref's wrap.
  if (k == 0 || n == 0 || k * 255 * 255 >= (int64_t{1} << 31)) return none();
  if ((w_zp->numel() != 1 && w_zp->numel() != n) || (w_scale->numel() != 1 && w_scale->numel() != n) ||
      w_scale->dtype() != ir::DType::kF32 || (bias && (bias->dtype() != ir::DType::kF32 || bias->numel() != n))) {
    return none();
  }
  auto op = std::make_unique<DynamicQuantMatMul>(node, static_cast<size_t>(k), static_cast<size_t>(n), *w, *w_zp,
                                                 *w_scale, bias);
  if (!op->prepare(ctx.packs.get())) return out_of_memory(node.label() + ": packed weights");
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
