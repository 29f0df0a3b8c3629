// com.microsoft.MatMulNBits (4-bit blockwise weights) on the cpu backend. B, scales, zero points
// and bias must be constants: B is dequantized once at compile time, (q - zp) * scale in f32
// exactly as the ref kernel and ONNX Runtime do, and packed into the f32 GEMM's panels; a run
// is then a plain f32 GEMM. So int4 here is a disk and load-size win (the model file holds
// 4-bit codes, ~1/7 of f32 with the scales), not a compute or resident-memory win: the packed
// panels are f32. A kernel that unpacks nibbles inside the microkernel (as ORT's MLAS
// SQNBitGemm does) would also save the memory bandwidth; it is not written yet. Anything else
// (run-time B, g_idx) runs on the reference kernel.
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_qlinear_conv_params.h"
#include "backends/pack_store.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::backends::cpu {
namespace {

const ir::Tensor* constant_of(const ir::Value* v, ir::DType dtype) {
  if (!v || !v->constant || v->constant->dtype() != dtype) return nullptr;
  return &*v->constant;
}

// Y[rows, N] = A[rows, K] x W + bias with W prepacked from the 4-bit codes.
class MatMulNBitsOp final : public CpuOp {
 public:
  MatMulNBitsOp(size_t k, size_t n) : cfg_(kernels::f32_gemm_config()), k_(k), n_(n) {}

  // Dequantizes the codes into W^T [N][K] and packs it, through `packs` when given (keyed by the
  // codes' value `codes`, the block size and a hash of the scales and zero points). False when
  // memory runs out.
  bool pack(const uint8_t* q, const float* scales, const uint8_t* zp, size_t block, PackStore* packs,
            const ir::Value* codes) {
    const size_t blocks = (k_ + block - 1) / block, zp_stride = (blocks + 1) / 2;
    auto fill = [&](float* dst) { dequantize_and_pack(q, scales, zp, block, dst); };
    const size_t floats = kernels::f32_gemm_packed_b_size(k_, n_, cfg_.nr);
    if (packs && codes) {
      std::vector<float> baked(scales, scales + n_ * blocks);
      for (size_t i = 0; zp && i < n_ * zp_stride; ++i) baked.push_back(zp[i]);
      auto key = [&] {
        return pack_key("f32.nbits4.pack_b", *codes,
                        {cfg_.nr, k_, n_, block, zp ? 1u : 0u, qconv_values_hash(nullptr, baked, baked.size())});
      };
      return pack_weights(packs, *codes, key, floats, &packed_, fill);
    }
    if (!packed_.resize(floats)) return false;
    fill(packed_.data());
    return true;
  }
  std::vector<float> bias_;

  size_t scratch_floats(const OpTensors&, size_t) const override {
    return (kernels::f32_gemm_workspace_size(cfg_, k_) + sizeof(float) - 1) / sizeof(float) + 16;
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& a = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    const size_t m = static_cast<size_t>(a.numel()) / k_;
    if (m == 0) return ok_status();
    kernels::F32GemmArgs args;
    args.m = m;
    args.n = n_;
    args.k = k_;
    args.a = a.data<float>();
    args.a_row_stride = k_;
    args.b_packed = packed_.data();
    args.c = y.data<float>();
    args.c_stride = n_;
    args.bias = bias_.empty() ? nullptr : bias_.data();
    const kernels::F32GemmTasks tasks = kernels::f32_gemm_tasks(cfg_, m, n_, k_, rc.pool.threads());
    rc.pool.run(tasks.count(), [&](size_t i, size_t worker) {
      kernels::f32_gemm_task(cfg_, args, tasks, i, rc.scratch.get(worker));
    });
    return ok_status();
  }

 private:
  // W^T [N][K] dequantized from the codes, packed into dst.
  void dequantize_and_pack(const uint8_t* q, const float* scales, const uint8_t* zp, size_t block, float* dst) const {
    const size_t blocks = (k_ + block - 1) / block, blob = block / 2, zp_stride = (blocks + 1) / 2;
    std::vector<float> wt(k_ * n_);
    for (size_t j = 0; j < n_; ++j) {
      for (size_t b = 0; b < blocks; ++b) {
        int zero = 8;
        if (zp) zero = (zp[j * zp_stride + b / 2] >> (4 * (b % 2))) & 0x0F;
        const float scale = scales[j * blocks + b];
        const uint8_t* codes = q + (j * blocks + b) * blob;
        const size_t k_end = std::min(k_, (b + 1) * block);
        for (size_t kk = b * block; kk < k_end; ++kk) {
          const size_t i = kk - b * block;
          const int code = (codes[i / 2] >> (4 * (i % 2))) & 0x0F;
          wt[j * k_ + kk] = static_cast<float>(code - zero) * scale;
        }
      }
    }
    kernels::f32_gemm_pack_b(cfg_, k_, n_, wt.data(), 1, k_, dst);
  }

  const kernels::F32GemmConfig& cfg_;
  size_t k_, n_;
  PackedFloats packed_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_matmul_nbits(const ir::Node& node, const CompileContext& ctx) {
  const int64_t k = node.attrs.get_int("K", 0), n = node.attrs.get_int("N", 0);
  const int64_t block = node.attrs.get_int("block_size", 0);
  if (!is_f32(node.input(0)) || node.attrs.get_int("bits", 4) != 4 || node.has_input(4) || k < 1 || n < 1 ||
      block < 16) {
    return std::unique_ptr<CpuOp>();
  }
  const int64_t blocks = (k + block - 1) / block;
  const ir::Tensor* q = constant_of(node.input(1), ir::DType::kU8);
  const ir::Tensor* scales = constant_of(node.input(2), ir::DType::kF32);
  const ir::Tensor* zp = node.has_input(3) ? constant_of(node.input(3), ir::DType::kU8) : nullptr;
  const ir::Tensor* bias = node.has_input(5) ? constant_of(node.input(5), ir::DType::kF32) : nullptr;
  if (!q || !scales || (node.has_input(3) && !zp) || (node.has_input(5) && !bias)) return std::unique_ptr<CpuOp>();
  if (q->numel() != n * blocks * (block / 2) || scales->numel() != n * blocks ||
      (zp && zp->numel() != n * ((blocks + 1) / 2)) || (bias && bias->numel() != n)) {
    return invalid_model(node.label() + ": B, scales, zero_points or bias do not match K, N and block_size");
  }
  auto op = std::make_unique<MatMulNBitsOp>(static_cast<size_t>(k), static_cast<size_t>(n));
  if (!op->pack(q->data<uint8_t>(), scales->data<float>(), zp ? zp->data<uint8_t>() : nullptr,
                static_cast<size_t>(block), ctx.packs.get(), node.input(1))) {
    return out_of_memory(node.label() + ": packed B");
  }
  if (bias) op->bias_.assign(bias->data<float>(), bias->data<float>() + n);
  return std::unique_ptr<CpuOp>(std::move(op));
}

}  // namespace nfuse::backends::cpu
