#include "support/onnx_builder.h"

namespace nfuse::testing {

namespace {
void set_type(::onnx::ValueInfoProto* vi, const std::string& name, int elem, const std::vector<int64_t>& dims) {
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d < 0) dim->set_dim_param("N");
    else dim->set_dim_value(d);
  }
}
}  // namespace

OnnxBuilder::OnnxBuilder(int opset) {
  model_.set_ir_version(8);
  auto* op = model_.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  model_.mutable_graph()->set_name("test_graph");
}

OnnxBuilder& OnnxBuilder::input(const std::string& name, int elem, std::vector<int64_t> dims) {
  set_type(model_.mutable_graph()->add_input(), name, elem, dims);
  return *this;
}

OnnxBuilder& OnnxBuilder::output(const std::string& name, int elem, std::vector<int64_t> dims) {
  set_type(model_.mutable_graph()->add_output(), name, elem, dims);
  return *this;
}

OnnxBuilder& OnnxBuilder::initializer(const std::string& name, std::vector<int64_t> dims, std::vector<float> values) {
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(::onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
  for (float v : values) t->add_float_data(v);
  return *this;
}

::onnx::NodeProto& OnnxBuilder::node(const std::string& op, std::vector<std::string> inputs,
                                     std::vector<std::string> outputs, const std::string& name) {
  auto* n = model_.mutable_graph()->add_node();
  n->set_op_type(op);
  n->set_name(name.empty() ? op + "_" + std::to_string(model_.graph().node_size()) : name);
  for (auto& i : inputs) n->add_input(i);
  for (auto& o : outputs) n->add_output(o);
  return *n;
}

std::string OnnxBuilder::bytes() const { return model_.SerializeAsString(); }

void set_int_attr(::onnx::NodeProto& node, const std::string& name, int64_t v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

void set_ints_attr(::onnx::NodeProto& node, const std::string& name, std::vector<int64_t> v) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

}  // namespace nfuse::testing
