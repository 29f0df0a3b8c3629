// Figures about a planned model: op histogram, parameter count, MACs at the plan's concrete
// shapes and arena use. What `nfuse inspect` prints.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compile/plan.h"

namespace nfuse::compile {

struct ParameterCount {
  int64_t elements = 0;
  int64_t bytes = 0;
};

struct PlanStats {
  std::map<std::string, int> op_histogram;  // every node of the graph, by op type
  // Constants that nodes read (weights, biases, quantization parameters, shape operands), of
  // every dtype, in the graph and its subgraphs; by dtype name.
  int64_t parameters = 0;
  int64_t parameter_bytes = 0;
  std::map<std::string, ParameterCount> parameters_by_dtype;
  // Multiply-accumulates of Conv/ConvTranspose/Gemm/MatMul/RNNs and their integer and quantized
  // forms, subgraphs included: an If counts its larger branch, a Loop its body times a constant
  // trip count, a Scan its body times a static scan length.
  int64_t macs = 0;
  // True when a count is a lower bound: a Loop's trip count or a Scan's length is not known at
  // plan time (the body counted once), or a MAC op's shapes are not static.
  bool macs_lower_bound = false;
  size_t arena_bytes = 0;                   // planned peak of the arena: tensors and operator scratch
  size_t tensor_arena_bytes = 0;            // the tensors' part alone
  size_t scratch_bytes = 0;                 // the largest one step's scratch (held in the arena)
  size_t arena_naive_bytes = 0;             // what one buffer per tensor would need
  int runtime_nodes = 0;                    // nodes executed per run
  int folded_nodes = 0;                     // nodes evaluated once at plan time
  std::vector<std::string> reference_nodes;  // nodes an optimized backend ran on reference kernels
};

PlanStats compute_stats(const ir::Graph& graph, const Plan& plan);

}  // namespace nfuse::compile
