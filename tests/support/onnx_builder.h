// Builds small ONNX models in tests, serialized to bytes, without files or Python.
#pragma once

#include <onnx/onnx_pb.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace nfuse::testing {

class OnnxBuilder {
 public:
  explicit OnnxBuilder(int opset = 13);
  // A graph input/output of element type `elem` (onnx::TensorProto::FLOAT...) and dims
  // (-1 = symbolic "N").
  OnnxBuilder& input(const std::string& name, int elem, std::vector<int64_t> dims);
  OnnxBuilder& output(const std::string& name, int elem, std::vector<int64_t> dims);
  OnnxBuilder& initializer(const std::string& name, std::vector<int64_t> dims, std::vector<float> values);
  ::onnx::NodeProto& node(const std::string& op, std::vector<std::string> inputs, std::vector<std::string> outputs,
                          const std::string& name = "");
  std::string bytes() const;
  ::onnx::ModelProto& model() { return model_; }
  const ::onnx::ModelProto& model() const { return model_; }

 private:
  ::onnx::ModelProto model_;
};

void set_int_attr(::onnx::NodeProto& node, const std::string& name, int64_t v);
void set_ints_attr(::onnx::NodeProto& node, const std::string& name, std::vector<int64_t> v);

}  // namespace nfuse::testing
