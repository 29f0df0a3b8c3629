// Gemm and MatMul on the cpu backend. A constant (2-D) B is scaled by alpha and packed once at
// compile time; the f32 GEMM driver then splits the output into tasks over the pool, with bias,
// fused residual and Relu/Clip in its epilogue. MatMul with a run-time or batched B packs each
// B matrix into the worker's scratch (one task per batch matrix). A MatMul's fused bias
// (nfuse.bias, from fuse_matmul_bias) goes into the packed path's bias; elsewhere the reference runs.
#include <algorithm>
#include <cstring>

#include "backends/cpu/cpu_conv_util.h"
#include "kernels/f32-gemm/f32_gemm.h"
#include "ops/matmul_geometry.h"

namespace nfuse::backends::cpu {
namespace {

using kernels::F32GemmArgs;
using kernels::F32GemmConfig;

size_t gemm_ws_floats(const F32GemmConfig& cfg, size_t k) {
  return (kernels::f32_gemm_workspace_size(cfg, k) + sizeof(float) - 1) / sizeof(float) + 16;
}

void post_activation(const Activation& act, float* y, size_t m, size_t n) {
  if (act.needs_pass()) act.apply(y, m * n);
}

// Y[rows, N] = A[rows, K] * B + bias (+ R), B prepacked.
class PackedGemm final : public CpuOp {
 public:
  PackedGemm(size_t k, size_t n, bool trans_a, Epilogue e)
      : cfg_(kernels::f32_gemm_config()), k_(k), n_(n), trans_a_(trans_a), epilogue_(std::move(e)) {}

  bool pack(const float* b, size_t k_stride, size_t n_stride, float alpha, PackStore* packs, const ir::Value& weight) {
    const size_t floats = kernels::f32_gemm_packed_b_size(k_, n_, cfg_.nr);
    uint32_t alpha_bits;
    std::memcpy(&alpha_bits, &alpha, sizeof alpha_bits);
    auto key = [&] { return pack_key("f32.gemm.pack_b", weight, {cfg_.nr, k_, n_, k_stride, n_stride, alpha_bits}); };
    return pack_weights(packs, weight, key, floats, &packed_, [&](float* dst) {
      kernels::f32_gemm_pack_b(cfg_, k_, n_, b, k_stride, n_stride, dst);
      if (alpha != 1.0f)
        for (size_t i = 0; i < floats; ++i) dst[i] *= alpha;
    });
  }
  std::vector<float> bias_;

  size_t scratch_floats(const OpTensors&, size_t) const override { return gemm_ws_floats(cfg_, k_); }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& a = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    const size_t m = k_ == 0 ? 0 : static_cast<size_t>(y.numel()) / std::max<size_t>(n_, 1);
    F32GemmArgs args;
    args.m = m;
    args.n = n_;
    args.k = k_;
    args.a = a.data<float>();
    args.a_row_stride = trans_a_ ? 1 : k_;
    args.a_col_stride = trans_a_ ? m : 1;
    args.b_packed = packed_.data();
    args.c = y.data<float>();
    args.c_stride = n_;
    args.bias = bias_.empty() ? nullptr : bias_.data();
    if (epilogue_.residual) {
      args.residual = t.implicit_inputs[0]->data<float>();
      args.residual_stride = n_;
    }
    args.min = epilogue_.act.min;
    args.max = epilogue_.act.max;
    if (m == 0 || n_ == 0) return ok_status();
    const kernels::F32GemmTasks tasks = kernels::f32_gemm_tasks(cfg_, m, n_, k_, rc.pool.threads());
    const Activation& act = epilogue_.act;
    auto task = [&](size_t i, size_t worker) {
      kernels::f32_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker));
      if (act.needs_pass()) {  // this task's rectangle, while it is still in cache
        const size_t m0 = (i / tasks.n_count) * tasks.m_step, m1 = std::min(m, m0 + tasks.m_step);
        const size_t n0 = (i % tasks.n_count) * tasks.n_step, n1 = std::min(n_, n0 + tasks.n_step);
        for (size_t r = m0; r < m1; ++r) act.apply(args.c + r * n_ + n0, n1 - n0);
      }
    };
    rc.pool.run(tasks.count(), task);
    return ok_status();
  }

 private:
  const F32GemmConfig& cfg_;
  size_t k_, n_;
  bool trans_a_;
  Epilogue epilogue_;
  PackedFloats packed_;
};

// Batched / run-time-B MatMul: each task packs one B matrix into its scratch and computes it.
class BatchedMatMul final : public CpuOp {
 public:
  BatchedMatMul(Epilogue e, std::unique_ptr<CpuOp> fallback)
      : cfg_(kernels::f32_gemm_config()), epilogue_(std::move(e)), fallback_(std::move(fallback)) {}

  size_t scratch_floats(const OpTensors& t, size_t) const override {
    if (t.inputs[0]->rank() < 2 || t.inputs[1]->rank() < 2) return 0;
    auto g = ops::resolve_matmul(t.inputs[0]->dims(), t.inputs[1]->dims());
    if (!g.ok()) return 0;
    const size_t k = static_cast<size_t>(g->k), n = static_cast<size_t>(g->n);
    return (kernels::f32_gemm_packed_b_size(k, n, cfg_.nr) + 15) / 16 * 16 + gemm_ws_floats(cfg_, k);
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& a = *t.inputs[0];
    const ir::Tensor& b = *t.inputs[1];
    if (a.rank() < 2 || b.rank() < 2) return fallback_->run(t, rc);  // 1-D operands: rare, reference
    if (a.dims() != a_dims_ || b.dims() != b_dims_) {
      NFUSE_ASSIGN_OR_RETURN(geo_, ops::resolve_matmul(a.dims(), b.dims()));
      a_dims_ = a.dims();
      b_dims_ = b.dims();
    }
    const size_t m = static_cast<size_t>(geo_.m), k = static_cast<size_t>(geo_.k), n = static_cast<size_t>(geo_.n);
    const size_t batches = geo_.a_matrix.size();
    const size_t packed_floats = (kernels::f32_gemm_packed_b_size(k, n, cfg_.nr) + 15) / 16 * 16;
    float* y = t.outputs[0]->data<float>();
    const float* r = epilogue_.residual ? t.implicit_inputs[0]->data<float>() : nullptr;
    auto task = [&](size_t bi, size_t worker) {
      float* ws = rc.scratch.get(worker);
      const float* bm = b.data<float>() + static_cast<size_t>(geo_.b_matrix[bi]) * k * n;
      kernels::f32_gemm_pack_b(cfg_, k, n, bm, n, 1, ws);
      F32GemmArgs args;
      args.m = m;
      args.n = n;
      args.k = k;
      args.a = a.data<float>() + static_cast<size_t>(geo_.a_matrix[bi]) * m * k;
      args.a_row_stride = k;
      args.b_packed = ws;
      args.c = y + bi * m * n;
      args.c_stride = n;
      if (r) {
        args.residual = r + bi * m * n;
        args.residual_stride = n;
      }
      args.min = epilogue_.act.min;
      args.max = epilogue_.act.max;
      kernels::f32_gemm(cfg_, args, 0, m, 0, n, ws + packed_floats);
      post_activation(epilogue_.act, args.c, m, n);
    };
    if (m && n) rc.pool.run(batches, task);
    return ok_status();
  }

 private:
  const F32GemmConfig& cfg_;
  Epilogue epilogue_;
  std::vector<int64_t> a_dims_, b_dims_;
  ops::MatMulGeometry geo_;
  std::unique_ptr<CpuOp> fallback_;
};

Result<std::unique_ptr<CpuOp>> make_gemm_op(const ir::Node& node, PackStore* packs) {
  const ir::Tensor* b = constant_f32(node.input(1));
  if (!b || b->rank() != 2) return std::unique_ptr<CpuOp>();
  const bool ta = node.attrs.get_int("transA", 0) == 1, tb = node.attrs.get_int("transB", 0) == 1;
  const float alpha = node.attrs.get_float("alpha", 1.0f), beta = node.attrs.get_float("beta", 1.0f);
  const size_t k = static_cast<size_t>(tb ? b->dim(1) : b->dim(0)), n = static_cast<size_t>(tb ? b->dim(0) : b->dim(1));
  std::vector<float> bias;
  if (node.has_input(2) && beta != 0.0f) {
    const ir::Tensor* c = constant_f32(node.input(2));
    // Bias broadcast along rows only ([N], [1, N] or a scalar); a full C runs on the reference.
    if (!c || !(c->numel() == 1 || (c->numel() == static_cast<int64_t>(n) && c->dims().back() == c->numel()))) {
      return std::unique_ptr<CpuOp>();
    }
    for (size_t j = 0; j < n; ++j) bias.push_back(beta * c->data<float>()[c->numel() == 1 ? 0 : j]);
  }
  NFUSE_ASSIGN_OR_RETURN(Epilogue e, read_epilogue(node));
  auto op = std::make_unique<PackedGemm>(k, n, ta, std::move(e));
  if (!op->pack(b->data<float>(), tb ? 1 : n, tb ? k : 1, alpha, packs, *node.input(1)))
    return out_of_memory(node.label() + ": packed B");
  op->bias_ = std::move(bias);
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_gemm(const ir::Node& node, const CompileContext& ctx) {
  if (!is_f32(node.input(0)) || !is_f32(node.input(1))) return std::unique_ptr<CpuOp>();
  const bool fused_bias = node.attrs.has(ops::kFusedBiasAttr);
  if (node.op_type == "Gemm") {
    if (fused_bias) return std::unique_ptr<CpuOp>();
    return make_gemm_op(node, ctx.packs.get());
  }
  const ir::Tensor* b = constant_f32(node.input(1));
  NFUSE_ASSIGN_OR_RETURN(Epilogue e, read_epilogue(node));
  if (b && b->rank() == 2) {  // any A rank: its rows are all the leading dims
    const size_t k = static_cast<size_t>(b->dim(0)), n = static_cast<size_t>(b->dim(1));
    std::vector<float> bias;
    if (fused_bias) {  // the last implicit input, broadcast along the rows: needs to be constant
      const ir::Tensor* c = constant_f32(e.fused_bias);
      if (!c || c->numel() != static_cast<int64_t>(n)) return std::unique_ptr<CpuOp>();
      bias.assign(c->data<float>(), c->data<float>() + n);
    }
    auto op = std::make_unique<PackedGemm>(k, n, false, std::move(e));
    if (!op->pack(b->data<float>(), n, 1, 1.0f, ctx.packs.get(), *node.input(1)))
      return out_of_memory(node.label() + ": packed B");
    op->bias_ = std::move(bias);
    return std::unique_ptr<CpuOp>(std::move(op));
  }
  if (fused_bias) return std::unique_ptr<CpuOp>();  // reference kernel plus the ref epilogue
  std::unique_ptr<CpuOp> ref = make_ref_op(node);
  if (!ref) return std::unique_ptr<CpuOp>();
  return std::unique_ptr<CpuOp>(std::make_unique<BatchedMatMul>(std::move(e), std::move(ref)));
}

}  // namespace nfuse::backends::cpu
