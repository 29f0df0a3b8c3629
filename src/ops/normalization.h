// Attribute rules of the normalization ops shared by the schema and the kernels.
#pragma once

#include <cstdint>
#include <optional>

#include "ir/graph.h"

namespace nfuse::ops {

// LayerNormalization's stash_type (an ONNX TensorProto dtype number) as an IR dtype; nullopt
// for values nfuse does not accept.
std::optional<ir::DType> stash_dtype(int64_t stash_type);

// Whether a BatchNormalization node normalizes with batch statistics: training_mode = 1 from
// opset 14, or (before) the presence of the running/saved statistics outputs.
bool batch_norm_training(const ir::Node& node);

}  // namespace nfuse::ops
