// nfuse IR -> ONNX: the inverse of onnx_importer. Writes a self-contained ModelProto: opset
// imports (the graph's `opsets`), producer "nfuse", graph inputs/outputs with types and
// (symbolic) shapes, constants as initializers (raw_data, little-endian; every dtype including
// f16, bf16 and bool), nodes with all attribute kinds (subgraphs of If/Loop/Scan included, with
// their outer-scope references written by name) and value_info for intermediates whose type is
// known. Values the importer made from Constant nodes become initializers.
//
// Only standard ONNX is written. nfuse-internal constructs are refused with kUnsupported naming
// the node: nfuse.* attributes (the fused epilogue: activation, residual, bias), nodes in the
// "nfuse" domain (nfuse.Gelu...) and implicit inputs that are not outer-scope references of the
// node's subgraphs. Export such graphs before optimization, or without fusions.
// Models whose serialized size would exceed protobuf's 2 GB limit are refused (kUnsupported):
// the exporter writes no external data.
#pragma once

#include <string>

#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::frontend::onnx {

struct ExportOptions {
  std::string producer_name = "nfuse";
  std::string producer_version;  // empty: nfuse's version
  // Default-domain opset when the graph records none (hand-built graphs).
  int default_opset = 13;
  // Write value_info for intermediate values whose dtype is known.
  bool value_info = true;
};

// Serializes `g` as an ONNX ModelProto.
Result<std::string> export_model_bytes(const ir::Graph& g, const ExportOptions& options = {});
// export_model_bytes written to `path` (kUnavailable when the file cannot be written).
Status save_model(const ir::Graph& g, const std::string& path, const ExportOptions& options = {});

}  // namespace nfuse::frontend::onnx
