// fuse_affine: takes a Mul and / or Add of scalar constants that follow a fused activation
// into the producer's epilogue as nfuse.affine = [scale, shift] (ops/fused_epilogue.h):
//
//   P(..., act) -> Mul(y, a) -> Add(., b)   ->   P(..., act, affine [a, b])
//   P(..., act) -> Mul(y, a)                ->   P(..., act, affine [a, 0])
//   P(..., act) -> Add(y, b)                ->   P(..., act, affine [1, b])
//
// (P = Conv | ConvTranspose | Gemm | MatMul, float32, with a fused activation; each replaced node
// its predecessor's only reader.) PP-LCNet, the backbone of PaddleOCR's v4 detector and
// recognizer, follows every activation with such a "learnable affine block": as separate ops
// they are two more passes over every feature map; fused, two operations on values still in
// cache. Without an activation the Mul and Add fold into the weights instead
// (fold_conv_mul_scale, fold_conv_add_bias).
#pragma once

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

Status fuse_affine(ir::Graph& graph, PassLog& log);

}  // namespace nfuse::passes
