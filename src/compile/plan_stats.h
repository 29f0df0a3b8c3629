// Figures about a planned model: op histogram, parameter count, MACs at the plan's concrete
// shapes and arena use. What `nfuse inspect` prints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compile/plan.h"

namespace nfuse::compile {

struct PlanStats {
  std::map<std::string, int> op_histogram;  // every node of the graph, by op type
  int64_t parameters = 0;                   // elements of floating-point constants (weights)
  int64_t parameter_bytes = 0;
  int64_t macs = 0;                         // multiply-accumulates of Conv/ConvTranspose/Gemm/MatMul/RNNs
  size_t arena_bytes = 0;                   // planned peak of the intermediate-tensor arena
  size_t arena_naive_bytes = 0;             // what one buffer per tensor would need
  int runtime_nodes = 0;                    // nodes executed per run
  int folded_nodes = 0;                     // nodes evaluated once at plan time
  std::vector<std::string> reference_nodes;  // nodes an optimized backend ran on reference kernels
};

PlanStats compute_stats(const ir::Graph& graph, const Plan& plan);

}  // namespace nfuse::compile
