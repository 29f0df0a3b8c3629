#include "ir/op_registry.h"

#include <algorithm>

namespace nfuse::ir {

Status InferContext::error(const std::string& message) const {
  return invalid_model(node.label() + ": " + message);
}

OpRegistry& OpRegistry::global() {
  static OpRegistry registry;
  return registry;
}

static std::string schema_key(std::string_view domain, std::string_view op) {
  std::string k(domain);
  k += "::";
  k += op;
  return k;
}

bool OpRegistry::add(OpSchema schema) {
  std::string key = schema_key(schema.domain, schema.op_type);
  schemas_[key] = std::move(schema);
  return true;
}

const OpSchema* OpRegistry::find(std::string_view op_type, std::string_view domain) const {
  if (domain == "ai.onnx") domain = "";
  auto it = schemas_.find(schema_key(domain, op_type));
  return it == schemas_.end() ? nullptr : &it->second;
}

std::vector<std::string> OpRegistry::op_types() const {
  std::vector<std::string> out;
  for (const auto& [key, schema] : schemas_) {
    out.push_back(schema.domain.empty() ? schema.op_type : schema.domain + "." + schema.op_type);
  }
  std::sort(out.begin(), out.end());
  return out;
}

Status verify_node(const Node& node) {
  const OpSchema* schema = OpRegistry::global().find(node.op_type, node.domain);
  if (!schema) return unsupported(node.label() + ": op type is not supported by nfuse");
  const int n_in = node.num_inputs();
  const int n_out = node.num_outputs();
  if (n_in < schema->min_inputs || n_in > schema->max_inputs) {
    return invalid_model(node.label() + ": has " + std::to_string(n_in) + " inputs, expected " +
                         std::to_string(schema->min_inputs) + ".." + std::to_string(schema->max_inputs));
  }
  if (n_out < schema->min_outputs || n_out > schema->max_outputs) {
    return invalid_model(node.label() + ": has " + std::to_string(n_out) + " outputs, expected " +
                         std::to_string(schema->min_outputs) + ".." +
                         std::to_string(schema->max_outputs));
  }
  for (int i = 0; i < schema->min_inputs && i < n_in; ++i) {
    if (!node.has_input(i)) {
      return invalid_model(node.label() + ": required input " + std::to_string(i) + " is missing");
    }
  }
  if (schema->verify) NFUSE_RETURN_IF_ERROR(schema->verify(node), "");
  return ok_status();
}

Status infer_node(const Node& node, const std::vector<const Tensor*>& values,
                  std::vector<TensorType>* out_types, std::vector<Tensor>* out_values,
                  const std::vector<const TensorType*>& types,
                  const std::vector<const Tensor*>& implicit_values) {
  const OpSchema* schema = OpRegistry::global().find(node.op_type, node.domain);
  if (!schema || !schema->infer) return unsupported(node.label() + ": no shape inference for this op");
  InferContext ctx{node, {}, {}, {}, {}, {}};
  // A known value's own dims are more precise than the recorded (possibly symbolic) type.
  std::vector<TensorType> concrete(node.inputs.size());
  ctx.input_types.reserve(node.inputs.size());
  ctx.input_values.reserve(node.inputs.size());
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const Value* v = node.inputs[i];
    const Tensor* t = i < values.size() ? values[i] : nullptr;
    if (!t && v && v->constant) t = &*v->constant;
    if (t) {
      concrete[i] = TensorType{t->dtype(), Shape::from_dims(t->dims())};
      ctx.input_types.push_back(&concrete[i]);
    } else if (i < types.size() && types[i]) {
      ctx.input_types.push_back(v ? types[i] : nullptr);
    } else {
      ctx.input_types.push_back(v ? &v->type : nullptr);
    }
    ctx.input_values.push_back(t);
  }
  ctx.implicit_values = implicit_values;
  ctx.implicit_values.resize(node.implicit_inputs.size(), nullptr);
  ctx.output_types.resize(node.outputs.size());
  ctx.output_values.resize(node.outputs.size());
  NFUSE_RETURN_IF_ERROR_PLAIN(schema->infer(ctx));
  *out_types = std::move(ctx.output_types);
  if (out_values) *out_values = std::move(ctx.output_values);
  return ok_status();
}

}  // namespace nfuse::ir
