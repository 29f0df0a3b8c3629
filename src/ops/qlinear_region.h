// The ops nfuse.QLinearRegion runs (ops/qlinear_region.cpp), for the pass that mints it
// (fuse_qdq_lookup) and its schema; the kernels map each name to their step
// (kernels/f32-region/f32_region.h), which a test checks name by name.
#pragma once

#include <string>
#include <vector>

#include "ir/op_registry.h"
#include "nfuse/status.h"

namespace nfuse::ops {

const std::vector<std::string>& qlinear_region_ops();
bool qlinear_region_runs(const std::string& op_type);

// The checks of a region's attributes (ops, operands, params) and of its constants, inputs
// first_constant.. (f32, [1] or [C] where C is dim 1 of `x`, the shape the region runs on):
// shared by nfuse.QLinearRegion and nfuse.QLinearConvRegion.
Status check_region_body(ir::InferContext& ctx, int first_constant, const ir::Shape& x);

}  // namespace nfuse::ops
