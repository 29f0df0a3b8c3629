// ONNX TensorProto <-> ir::Tensor, and ONNX element types <-> ir::DType.
#pragma once

#include <string>

#include "ir/tensor.h"
#include "nfuse/status.h"

namespace onnx {
class TensorProto;
}

namespace nfuse::frontend::onnx {

// kUndefined for element types nfuse cannot hold (string, complex, float8).
ir::DType dtype_from_onnx(int elem_type);
int dtype_to_onnx(ir::DType t);
std::string onnx_elem_type_name(int elem_type);

// Decodes a TensorProto (raw_data, typed fields or external data). `base_dir` resolves external
// data locations; they must stay inside it. Every size is checked against the data present.
Result<ir::Tensor> tensor_from_proto(const ::onnx::TensorProto& proto, const std::string& base_dir);
// Frees a TensorProto's data (raw_data and the typed value fields), keeping name, dims, type and
// external-data references; the storage is released, not just cleared. The importer calls it
// once a tensor has been converted so that the weights are not held twice.
void release_tensor_payload(::onnx::TensorProto& proto);
// Encodes a tensor as raw_data.
void tensor_to_proto(const ir::Tensor& t, const std::string& name, ::onnx::TensorProto* proto);
// Reads a serialized TensorProto file (the conformance cases' input_0.pb, output_0.pb).
Result<ir::Tensor> load_tensor_file(const std::string& path);

}  // namespace nfuse::frontend::onnx
