// The ops nfuse.QLinearRegion runs (ops/qlinear_region.cpp), for the pass that mints it
// (fuse_qdq_lookup) and its schema; the kernels map each name to their step
// (kernels/f32-region/f32_region.h), which a test checks name by name.
#pragma once

#include <string>
#include <vector>

namespace nfuse::ops {

const std::vector<std::string>& qlinear_region_ops();
bool qlinear_region_runs(const std::string& op_type);

}  // namespace nfuse::ops
