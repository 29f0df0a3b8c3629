// The read-only floats an op's kernel reads on every run (weights, biases), without a copy where
// the bytes already live as long as the op: a graph constant's storage outlives every op built
// on its node (ops keep their node; the graph owns its constants, and a context binary's
// constants are its mapping, kept by the model), so an op that borrows adds no heap, page
// faults or copy to the time a session takes to become ready.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "ir/tensor.h"

namespace nfuse::backends::cpu {

class ConstFloats {
 public:
  ConstFloats() = default;
  // `t` must be an f32 graph constant of the node the op is built on.
  static ConstFloats borrow(const ir::Tensor& t) {
    ConstFloats c;
    c.data_ = t.data<float>();
    c.size_ = static_cast<size_t>(t.numel());
    return c;
  }
  // For values the op computed itself (e.g. weights with their zero point subtracted).
  static ConstFloats own(std::vector<float> values) {
    ConstFloats c;
    c.owned_ = std::move(values);
    c.data_ = c.owned_.data();
    c.size_ = c.owned_.size();
    return c;
  }
  // A vector's move keeps its buffer, so an owned copy's data() stays valid across moves.
  ConstFloats(ConstFloats&&) noexcept = default;
  ConstFloats& operator=(ConstFloats&&) noexcept = default;
  ConstFloats(const ConstFloats&) = delete;
  ConstFloats& operator=(const ConstFloats&) = delete;

  const float* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  float operator[](size_t i) const { return data_[i]; }

 private:
  std::vector<float> owned_;
  const float* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace nfuse::backends::cpu
