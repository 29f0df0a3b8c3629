// Default-domain opset conversion with ONNX's own version converter (libonnx's
// onnx::version_conversion::ConvertVersion, the C++ behind onnx.version_converter): nfuse's IR
// keeps each node in its opset's form, so raising a graph's opset means rewriting nodes whose
// form changed (Squeeze/Unsqueeze/Split axes, ReduceSum axes, ...). The quantizer needs this to
// bring opset-11/12 models (the PaddleOCR exports) to opset 13, the first with per-axis
// DequantizeLinear.
#pragma once

#include <memory>

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::frontend::onnx {

// A copy of `g` converted to default-domain opset `target` (>= the current one; a graph already
// at or above it is copied unchanged). kUnsupported naming the converter's complaint when ONNX
// cannot convert a node.
Result<std::unique_ptr<ir::Graph>> convert_default_opset(const ir::Graph& g, int target);

}  // namespace nfuse::frontend::onnx
