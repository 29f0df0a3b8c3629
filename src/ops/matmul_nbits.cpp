// MatMulNBits, ONNX Runtime's weight-only quantized MatMul in its contrib domain "com.microsoft"
// (as onnxruntime.quantization.matmul_4bits_quantizer writes it, and nfuse's own
// quant/weight_only.cpp):
//
//   MatMulNBits(A, B, scales, zero_points?, g_idx?, bias?) -> Y, attributes K, N, bits, block_size
//
//   Y[..., N] = A[..., K] x W + bias, W[k][n] = (q[n][k] - zp[n][k / block_size]) * scales[...]
//
// B is u8 [N, n_blocks, blob_size] (n_blocks = ceil(K / block_size), blob_size = block_size *
// bits / 8): column n of W, block by block, two 4-bit codes per byte, the even k in the low
// nibble. scales: f32 [N * n_blocks], column-major (n * n_blocks + block). zero_points: u8
// [N * ceil(n_blocks / 2)], packed like B (block b of column n in byte n * ceil(n_blocks/2) +
// b / 2, low nibble for even b); absent: 8 (symmetric). K not a multiple of block_size pads the
// last block. nfuse covers bits = 4, f32 A, u8 zero points and no g_idx (act-order GPTQ); the
// float zero points ORT also accepts (HQQ) are refused here, not silently misread. The
// accuracy_level attribute is ignored: nfuse always computes in f32 (ORT at level 4 quantizes A
// to int8 and so differs from nfuse by that rounding).
#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status verify_matmul_nbits(const ir::Node& node) {
  for (const char* name : {"K", "N", "block_size"}) {
    if (!node.attrs.has(name)) return invalid_model(node.label() + ": attribute '" + name + "' is required");
  }
  const int64_t k = node.attrs.get_int("K", 0), n = node.attrs.get_int("N", 0);
  const int64_t bits = node.attrs.get_int("bits", 4), block = node.attrs.get_int("block_size", 0);
  if (k < 1 || n < 1) return invalid_model(node.label() + ": K and N must be positive");
  if (bits != 4) return unsupported(node.label() + ": bits=" + std::to_string(bits) + " (nfuse supports 4)");
  if (block < 16 || (block & (block - 1)) != 0) {
    return invalid_model(node.label() + ": block_size must be a power of 2 and at least 16, got " +
                         std::to_string(block));
  }
  if (node.has_input(4)) return unsupported(node.label() + ": g_idx (act-order) is not supported");
  return ok_status();
}

// Input i must hold exactly `count` elements when its shape is static.
Status require_numel(const ir::InferContext& ctx, int i, int64_t count, const char* what) {
  auto numel = ctx.shape(i).static_numel();
  if (numel && *numel != count) {
    return ctx.error(std::string(what) + " must have " + std::to_string(count) + " elements, got " +
                     std::to_string(*numel));
  }
  return ok_status();
}

Status infer_matmul_nbits(ir::InferContext& ctx) {
  const int64_t k = ctx.attrs().get_int("K", 0), n = ctx.attrs().get_int("N", 0);
  const int64_t block = ctx.attrs().get_int("block_size", 16);
  const int64_t blocks = (k + block - 1) / block;
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, dtype_bit(ir::DType::kF32)));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 1, dtype_bit(ir::DType::kU8)));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 2, dtype_bit(ir::DType::kF32)));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_numel(ctx, 1, n * blocks * (block / 2), "B"));
  NFUSE_RETURN_IF_ERROR_PLAIN(require_numel(ctx, 2, n * blocks, "scales"));
  if (ctx.has_input(3)) {
    if (ctx.dtype(3) != ir::DType::kU8) return ctx.error("zero_points must be u8 (float zero points are unsupported)");
    NFUSE_RETURN_IF_ERROR_PLAIN(require_numel(ctx, 3, n * ((blocks + 1) / 2), "zero_points"));
  }
  if (ctx.has_input(5)) {
    NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 5, dtype_bit(ir::DType::kF32)));
    NFUSE_RETURN_IF_ERROR_PLAIN(require_numel(ctx, 5, n, "bias"));
  }
  const ir::Shape& a = ctx.shape(0);
  if (!a.rank_known()) {
    ctx.output(0) = {ir::DType::kF32, ir::Shape::unknown_rank()};
    return ok_status();
  }
  if (a.rank() < 1) return ctx.error("A must have rank >= 1");
  const ir::Dim& ak = a[a.rank() - 1];
  if (ak.is_static() && ak.value != k) {
    return ctx.error("A's last dim is " + std::to_string(ak.value) + " but K is " + std::to_string(k));
  }
  ir::Shape y = a;
  y[y.rank() - 1] = ir::Dim(n);
  ctx.output(0) = {ir::DType::kF32, std::move(y)};
  return ok_status();
}

}  // namespace

void register_matmul_nbits_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "MatMulNBits",
                            .min_inputs = 3,
                            .max_inputs = 6,
                            .verify = verify_matmul_nbits,
                            .infer = infer_matmul_nbits,
                            .domain = "com.microsoft"});
}

}  // namespace nfuse::ops
