// Matching helpers for the 16-bit-activation (W8A16) QDQ fusions in fuse_qdq_conv and
// fuse_qdq_matmul: 16-bit Q/DQ come either from ONNX opset 21 (default domain) or, at lower
// opsets, from ONNX Runtime's "com.microsoft" QuantizeLinear / DequantizeLinear (same inputs,
// attributes and arithmetic); both are accepted.
#pragma once

#include <optional>

#include "ir/graph.h"
#include "passes/qdq_match.h"

namespace nfuse::passes {

bool is_q16(ir::DType t);  // u16 or i16

// True when `n` is op `op_type` (QuantizeLinear / DequantizeLinear) of the default domain or
// of "com.microsoft".
bool is_qdq_op(const ir::Node* n, const char* op_type);

// The node producing `v` (output 0, not a constant) when it is is_qdq_op(op_type), else nullptr.
ir::Node* qdq_producer(const ir::Value* v, const char* op_type);

// tensor_params for 16-bit storage: a one-element f32 constant scale, finite and > 0, and a
// one-element constant zero point of `dtype` (u16/i16; required); no block_size.
std::optional<QParams> tensor_params16(const ir::Node& n, ir::DType dtype);

// The per-tensor parameters of an activation's QuantizeLinear (`quantize`: its output's dtype) or
// DequantizeLinear (its input's): 8-bit ones as activation_q_params / activation_dq_params take
// them (default domain), 16-bit ones in the default domain or "com.microsoft" (tensor_params16).
// For the value-moving and requantizing fusions that serve both widths (Resize, Concat).
std::optional<QParams> activation_params_any_width(const ir::Node* n, bool quantize);

}  // namespace nfuse::passes
