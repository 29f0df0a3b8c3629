// Node attributes: a small typed map. Getters with defaults for optional attributes and
// Result-returning getters for required ones, so ops validate once at verify time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "ir/tensor.h"
#include "nfuse/status.h"

namespace nfuse::ir {

class Graph;

using AttrValue = std::variant<int64_t, float, std::string, std::vector<int64_t>, std::vector<float>,
                               std::vector<std::string>, Tensor, std::shared_ptr<Graph>>;

class Attributes {
 public:
  void set(const std::string& name, AttrValue v) { map_[name] = std::move(v); }
  void erase(const std::string& name) { map_.erase(name); }
  bool has(const std::string& name) const { return map_.count(name) != 0; }
  const std::map<std::string, AttrValue>& all() const { return map_; }
  bool empty() const { return map_.empty(); }

  // Optional attributes: the default when absent (or of another type).
  int64_t get_int(const std::string& name, int64_t def) const;
  float get_float(const std::string& name, float def) const;
  std::string get_string(const std::string& name, const std::string& def) const;
  std::vector<int64_t> get_ints(const std::string& name, std::vector<int64_t> def = {}) const;
  // The stored list itself (nullptr when absent or of another type): no copy.
  const std::vector<int64_t>* find_ints(const std::string& name) const { return find<std::vector<int64_t>>(name); }
  std::vector<float> get_floats(const std::string& name, std::vector<float> def = {}) const;
  std::vector<std::string> get_strings(const std::string& name) const;
  const Tensor* get_tensor(const std::string& name) const;           // nullptr when absent
  std::shared_ptr<Graph> get_graph(const std::string& name) const;  // nullptr when absent

  // Required attributes: kInvalidModel naming the attribute when absent or of another type.
  Result<int64_t> require_int(const std::string& name) const;
  Result<float> require_float(const std::string& name) const;
  Result<std::vector<int64_t>> require_ints(const std::string& name) const;

 private:
  template <typename T>
  const T* find(const std::string& name) const {
    auto it = map_.find(name);
    if (it == map_.end()) return nullptr;
    return std::get_if<T>(&it->second);
  }
  std::map<std::string, AttrValue> map_;
};

}  // namespace nfuse::ir
