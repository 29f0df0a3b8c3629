// Matching helpers shared by the QDQ fusion passes (fuse_qdq_conv, fuse_qdq_matmul): the
// constant quantization parameters of a QuantizeLinear / DequantizeLinear, read only when they
// are exactly what the integer ops (QLinearConv, QLinearMatMul) can take.
#pragma once

#include <optional>
#include <vector>

#include "ir/graph.h"

namespace nfuse::passes {

bool is_q8(ir::DType t);  // u8 or i8

// Per-tensor parameters of an activation's Q/DQ node `n` (inputs x, scale, zero point): a
// one-element f32 constant scale, finite and > 0, and a one-element constant zero point of
// `dtype` (u8/i8; required); no blocked quantization (block_size).
struct QParams {
  ir::Value* scale = nullptr;
  ir::Value* zero_point = nullptr;
  float s = 0.0f;
  int64_t zp = 0;
  ir::DType dtype = ir::DType::kU8;
};
std::optional<QParams> tensor_params(const ir::Node& n, ir::DType dtype);

// A weight DequantizeLinear `dq`: an s8 constant of rank in [min_rank, max_rank], an f32 scale
// per tensor or per axis `axis` (one entry per index, all finite and > 0), a zero point absent
// or all zero (s8, same element count as the scale). Default domain only, or also ONNX Runtime's
// "com.microsoft" DequantizeLinear (same arithmetic) when contrib_ok (the 16-bit fusions).
struct WeightParams {
  ir::Node* dq = nullptr;
  std::vector<float> scales;  // 1 or dim(axis) entries
};
std::optional<WeightParams> weight_params(ir::Node* dq, int min_rank, int max_rank, int axis,
                                          bool contrib_ok = false);

// The per-tensor parameters of an activation DequantizeLinear `dq` (default domain, zero point
// present; tensor_params with its data input's dtype), nullopt when `dq` is not one or they do
// not qualify. Used by the fusions of element-wise ops (fuse_qdq_binary, _concat, _pool).
std::optional<QParams> activation_dq_params(const ir::Node* dq);
// The same for a QuantizeLinear `q` (default domain, zero point present, its dtype).
std::optional<QParams> activation_q_params(const ir::Node* q);
// True when both hold the same per-tensor quantization (dtype, scale and zero point equal), so
// that quantize(dequantize(v)) is v for every value.
bool same_qparams(const QParams& a, const QParams& b);
// Completes the rewrite of `dqs... -> op -> q` into `fused` (already added): `fused` takes over
// q's output 0; op, q and each DequantizeLinear in `dqs` that nothing but `op` reads are removed.
void finish_qdq_rewrite(ir::Graph& graph, const std::vector<ir::Node*>& dqs, ir::Node* op, ir::Node& q,
                        ir::Node* fused);

}  // namespace nfuse::passes
