#include "ir/attributes.h"

namespace nfuse::ir {

int64_t Attributes::get_int(const std::string& name, int64_t def) const {
  const int64_t* v = find<int64_t>(name);
  return v ? *v : def;
}
float Attributes::get_float(const std::string& name, float def) const {
  if (const float* v = find<float>(name)) return *v;
  if (const int64_t* i = find<int64_t>(name)) return static_cast<float>(*i);
  return def;
}
std::string Attributes::get_string(const std::string& name, const std::string& def) const {
  const std::string* v = find<std::string>(name);
  return v ? *v : def;
}
std::vector<int64_t> Attributes::get_ints(const std::string& name, std::vector<int64_t> def) const {
  const auto* v = find<std::vector<int64_t>>(name);
  return v ? *v : def;
}
std::vector<float> Attributes::get_floats(const std::string& name, std::vector<float> def) const {
  const auto* v = find<std::vector<float>>(name);
  return v ? *v : def;
}
std::vector<std::string> Attributes::get_strings(const std::string& name) const {
  const auto* v = find<std::vector<std::string>>(name);
  return v ? *v : std::vector<std::string>{};
}
const Tensor* Attributes::get_tensor(const std::string& name) const { return find<Tensor>(name); }
std::shared_ptr<Graph> Attributes::get_graph(const std::string& name) const {
  const auto* v = find<std::shared_ptr<Graph>>(name);
  return v ? *v : nullptr;
}

Result<int64_t> Attributes::require_int(const std::string& name) const {
  if (const int64_t* v = find<int64_t>(name)) return *v;
  return invalid_model("required int attribute '" + name + "' is missing");
}
Result<float> Attributes::require_float(const std::string& name) const {
  if (const float* v = find<float>(name)) return *v;
  return invalid_model("required float attribute '" + name + "' is missing");
}
Result<std::vector<int64_t>> Attributes::require_ints(const std::string& name) const {
  if (const auto* v = find<std::vector<int64_t>>(name)) return *v;
  return invalid_model("required ints attribute '" + name + "' is missing");
}

}  // namespace nfuse::ir
