// Work of one node at the plan's concrete shapes: multiply-accumulates of the MAC-dominated ops
// (what `nfuse inspect` totals) and a FLOP estimate for every op (what the partitioner's cost
// model charges against a backend's peak).
#pragma once

#include <cstdint>

#include "backends/backend.h"
#include "ir/graph.h"

namespace nfuse::partition {

// MACs of Conv/ConvTranspose/Gemm/MatMul/LSTM/GRU/RNN and their integer and quantized forms
// (ConvInteger, MatMulInteger, QLinearConv, QLinearMatMul, and nfuse's 16-bit ones); 0 for ops
// whose cost is not multiply-accumulate dominated, and when a shape it needs is not static.
int64_t node_macs(const ir::Node& node, const backends::PlanView& type_of);
// Whether node_macs counts this op type (so 0 from it means "shapes not static").
bool is_mac_op(const ir::Node& node);

// Floating-point (or integer) operations: 2 per MAC where node_macs counts them, else one per
// output element times the window size for pooling / reductions (a simple, documented guess:
// these ops are memory-bound, so the roofline takes their bytes anyway).
double node_flops(const ir::Node& node, const backends::PlanView& type_of);

}  // namespace nfuse::partition
