// ONNX -> nfuse IR. Accepts the default ONNX domain at opsets 1..17 (7..17 is what nfuse
// targets; older files load where their ops are unchanged), initializers, Constant nodes,
// external data files, symbolic and dynamic dims, subgraphs (If) and multiple outputs.
// Anything it cannot represent is rejected with an error naming the node, op type, opset and
// reason.
#pragma once

#include <memory>
#include <string>

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::frontend::onnx {

inline constexpr int kMaxOpset = 17;

struct ImportOptions {
  // Run shape inference and Graph::verify() after import (tests turn it off to see raw graphs).
  bool verify = true;
  // Resolve external-data references (off for in-memory fuzzing: no file access at all).
  bool external_data = true;
};

// Loads a .onnx file; external data is resolved relative to its folder.
Result<std::unique_ptr<ir::Graph>> load_model(const std::string& path, const ImportOptions& options = {});
// Parses a serialized ModelProto held in memory.
Result<std::unique_ptr<ir::Graph>> load_model_from_bytes(const void* data, size_t size, const std::string& base_dir,
                                                         const ImportOptions& options = {});

}  // namespace nfuse::frontend::onnx
