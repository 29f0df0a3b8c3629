// Shapes with symbolic or unknown dims, and the static type of a Value.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/dtype.h"

namespace nfuse::ir {

// A dimension: a known size (value >= 0), a named symbol ("batch"), or unknown (value -1, no symbol).
struct Dim {
  int64_t value = -1;
  std::string symbol;

  Dim() = default;
  Dim(int64_t v) : value(v) {}  // NOLINT(google-explicit-constructor)
  static Dim symbolic(std::string name) {
    Dim d;
    d.symbol = std::move(name);
    return d;
  }
  bool is_static() const { return value >= 0; }
  bool operator==(const Dim& o) const { return value == o.value && symbol == o.symbol; }
  std::string to_string() const;  // "224", "batch" or "?"
};

// A shape: unknown rank, or a list of Dims.
class Shape {
 public:
  Shape() : rank_known_(false) {}
  Shape(std::vector<Dim> dims) : rank_known_(true), dims_(std::move(dims)) {}  // NOLINT
  static Shape from_dims(const std::vector<int64_t>& dims);
  static Shape unknown_rank() { return Shape(); }

  bool rank_known() const { return rank_known_; }
  int rank() const { return static_cast<int>(dims_.size()); }  // 0 when unknown: check rank_known()
  const std::vector<Dim>& dims() const { return dims_; }
  std::vector<Dim>& dims() { return dims_; }
  const Dim& operator[](int i) const { return dims_[static_cast<size_t>(i)]; }
  Dim& operator[](int i) { return dims_[static_cast<size_t>(i)]; }
  bool is_static() const;  // rank known and every dim static
  std::optional<std::vector<int64_t>> static_dims() const;
  std::optional<int64_t> static_numel() const;
  bool operator==(const Shape& o) const { return rank_known_ == o.rank_known_ && dims_ == o.dims_; }
  std::string to_string() const;  // "[1,3,?,batch]" or "[*]"

 private:
  bool rank_known_;
  std::vector<Dim> dims_;
};

struct TensorType {
  DType dtype = DType::kUndefined;
  Shape shape;

  std::string to_string() const;  // "f32[1,3,224,224]"
};

}  // namespace nfuse::ir
