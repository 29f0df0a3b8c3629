#include "frontend/onnx/opset_convert.h"

#include <onnx/onnx_pb.h>
#include <onnx/version_converter/convert.h>

#include <exception>
#include <string>

#include "frontend/onnx/onnx_exporter.h"
#include "frontend/onnx/onnx_importer.h"

namespace nfuse::frontend::onnx {

Result<std::unique_ptr<ir::Graph>> convert_default_opset(const ir::Graph& g, int target) {
  NFUSE_ASSIGN_OR_RETURN(std::string bytes, export_model_bytes(g));
  ImportOptions io;
  io.external_data = false;
  ::onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) return internal_error("opset conversion: the exported model does not parse");
  int current = 0;
  for (const auto& op : model.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") current = static_cast<int>(op.version());
  }
  if (current >= target) return load_model_from_bytes(bytes.data(), bytes.size(), ".", io);
  std::string converted;
  try {
    ::onnx::ModelProto out = ::onnx::version_conversion::ConvertVersion(model, target);
    if (!out.SerializeToString(&converted)) return internal_error("opset conversion: cannot serialize the result");
  } catch (const std::exception& e) {
    return unsupported("converting the model from opset " + std::to_string(current) + " to " +
                       std::to_string(target) + ": " + e.what());
  }
  return load_model_from_bytes(converted.data(), converted.size(), ".", io);
}

}  // namespace nfuse::frontend::onnx
