#include "ir/shape.h"

namespace nfuse::ir {

std::string Dim::to_string() const {
  if (is_static()) return std::to_string(value);
  if (!symbol.empty()) return symbol;
  return "?";
}

Shape Shape::from_dims(const std::vector<int64_t>& dims) {
  std::vector<Dim> d;
  d.reserve(dims.size());
  for (int64_t v : dims) d.emplace_back(v);
  return Shape(std::move(d));
}

bool Shape::is_static() const {
  if (!rank_known_) return false;
  for (const Dim& d : dims_)
    if (!d.is_static()) return false;
  return true;
}

std::optional<std::vector<int64_t>> Shape::static_dims() const {
  if (!is_static()) return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const Dim& d : dims_) out.push_back(d.value);
  return out;
}

std::optional<int64_t> Shape::static_numel() const {
  if (!is_static()) return std::nullopt;
  int64_t n = 1;
  for (const Dim& d : dims_) n *= d.value;
  return n;
}

std::string Shape::to_string() const {
  if (!rank_known_) return "[*]";
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ',';
    s += dims_[i].to_string();
  }
  return s + "]";
}

std::string TensorType::to_string() const {
  return std::string(dtype_name(dtype)) + shape.to_string();
}

}  // namespace nfuse::ir
