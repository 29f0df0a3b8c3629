// A short list of int64 per spatial axis (kernel sizes, strides, pads, output sizes) kept inline:
// window geometry is resolved many times while a model is planned (graph verify, shape
// propagation, each backend's algorithm choice), and as std::vectors its eleven lists cost eleven
// heap allocations per call. Lists longer than the inline capacity (more than 4 spatial axes'
// pads) spill to the heap, so every rank still works.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <iterator>
#include <vector>

namespace nfuse::ops {

class AxisList {
 public:
  static constexpr size_t kInline = 8;

  AxisList() = default;
  AxisList(size_t n, int64_t value) { assign(n, value); }
  AxisList(std::initializer_list<int64_t> values) { assign(values.begin(), values.end()); }
  AxisList(const std::vector<int64_t>& values) { assign(values.begin(), values.end()); }  // NOLINT: implicit
  AxisList(const AxisList&) = default;
  AxisList& operator=(const AxisList&) = default;
  // A moved-from list is empty (its heap part went with the move).
  AxisList(AxisList&& o) noexcept : size_(o.size_), inline_(o.inline_), heap_(std::move(o.heap_)) { o.size_ = 0; }
  AxisList& operator=(AxisList&& o) noexcept {
    size_ = o.size_;
    inline_ = o.inline_;
    heap_ = std::move(o.heap_);
    o.size_ = 0;
    return *this;
  }

  template <std::input_iterator It>
  void assign(It first, It last) {
    resize(static_cast<size_t>(std::distance(first, last)));
    std::copy(first, last, data());
  }
  void assign(size_t n, int64_t value) {
    resize(n);
    std::fill(begin(), end(), value);
  }
  void resize(size_t n) {
    if (n > kInline) {
      if (size_ <= kInline) heap_.assign(inline_.begin(), inline_.begin() + size_);
      heap_.resize(n);
    } else if (size_ > kInline) {
      std::copy(heap_.begin(), heap_.begin() + n, inline_.begin());
      heap_.clear();
    }
    if (n <= kInline && n > size_) std::fill(inline_.begin() + size_, inline_.begin() + n, 0);
    size_ = n;
  }
  void push_back(int64_t v) {
    resize(size_ + 1);
    data()[size_ - 1] = v;
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  int64_t* data() { return size_ > kInline ? heap_.data() : inline_.data(); }
  const int64_t* data() const { return size_ > kInline ? heap_.data() : inline_.data(); }
  int64_t& operator[](size_t i) { return data()[i]; }
  int64_t operator[](size_t i) const { return data()[i]; }
  int64_t back() const { return data()[size_ - 1]; }
  int64_t* begin() { return data(); }
  int64_t* end() { return data() + size_; }
  const int64_t* begin() const { return data(); }
  const int64_t* end() const { return data() + size_; }

  std::vector<int64_t> vector() const { return std::vector<int64_t>(begin(), end()); }
  explicit operator std::vector<int64_t>() const { return vector(); }

  friend bool operator==(const AxisList& a, const AxisList& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }
  friend bool operator!=(const AxisList& a, const AxisList& b) { return !(a == b); }

 private:
  size_t size_ = 0;
  std::array<int64_t, kInline> inline_{};
  std::vector<int64_t> heap_;  // the list when it is longer than kInline
};

}  // namespace nfuse::ops
