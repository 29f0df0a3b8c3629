// Numpy broadcasting over any number of inputs and any rank, as rows: the output dims are
// collapsed (adjacent axes merge where every input is either full on both or broadcast on
// both), and each innermost row is visited with every input's element offset and its step along
// the row (1, or 0 where that input is broadcast along it). The row loops of the cpu ops that
// take such inputs (Where, the comparisons, boolean logic, the general broadcast of the binary
// arithmetic ops, Expand) are then plain strided or scalar loops the compiler vectorises.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "backends/cpu/cpu_op.h"

namespace nfuse::backends::cpu {

// The dims a cached plan was made for: `same` compares without copying (run() calls it on
// every inference), `set` remembers new ones.
template <size_t M>
struct DimsKey {
  std::array<std::vector<int64_t>, M> dims;
  bool valid = false;
  bool same(const std::array<const std::vector<int64_t>*, M>& now) const {
    if (!valid) return false;
    for (size_t i = 0; i < M; ++i)
      if (dims[i] != *now[i]) return false;
    return true;
  }
  void set(const std::array<const std::vector<int64_t>*, M>& now) {
    for (size_t i = 0; i < M; ++i) dims[i] = *now[i];
    valid = true;
  }
};

template <size_t N>
class BroadcastRows {
 public:
  // False when some input does not broadcast to `out` (right-aligned numpy rules).
  bool plan(const std::vector<int64_t>& out, const std::array<const std::vector<int64_t>*, N>& in) {
    dims_.clear();
    for (auto& s : strides_) s.clear();
    const size_t r = out.size();
    std::vector<std::array<bool, N>> full(r);
    for (size_t k = 0; k < N; ++k) {
      const std::vector<int64_t>& d = *in[k];
      if (d.size() > r) return false;
      for (size_t i = 0; i < r; ++i) {
        const int64_t v = i < r - d.size() ? 1 : d[i - (r - d.size())];
        if (v != out[i] && v != 1) return false;
        full[i][k] = v == out[i] && out[i] != 1;
      }
    }
    // Collapse: size-1 output axes vanish; an axis merges into the previous kept one when every
    // input's fullness agrees.
    std::vector<std::array<bool, N>> kept;
    for (size_t i = 0; i < r; ++i) {
      if (out[i] == 1) continue;
      const size_t d = static_cast<size_t>(out[i]);
      if (!dims_.empty() && kept.back() == full[i]) {
        dims_.back() *= d;
      } else {
        dims_.push_back(d);
        kept.push_back(full[i]);
      }
    }
    if (dims_.empty()) {
      dims_.push_back(1);
      kept.push_back({});
      for (size_t k = 0; k < N; ++k) kept.back()[k] = true;
    }
    for (size_t k = 0; k < N; ++k) {
      strides_[k].assign(dims_.size(), 0);
      size_t s = 1;
      for (size_t i = dims_.size(); i-- > 0;) {
        if (kept[i][k]) {
          strides_[k][i] = s;
          s *= dims_[i];
        }
      }
    }
    rows_ = 1;
    for (size_t i = 0; i + 1 < dims_.size(); ++i) rows_ *= dims_[i];
    return true;
  }

  size_t rows() const { return rows_; }
  size_t row_length() const { return dims_.back(); }
  // Input k's step along a row: 1, or 0 where it is broadcast along the innermost axis.
  size_t step(size_t k) const { return strides_[k].back(); }

  // fn(out_offset, offsets) for rows [r0, r1): offsets[k] is input k's element at the row's start.
  template <typename Fn>
  void for_rows(size_t r0, size_t r1, Fn&& fn) const {
    if (r0 >= r1) return;
    const size_t outer = dims_.size() - 1;
    std::vector<size_t> idx(outer);
    std::array<size_t, N> off{};
    size_t rem = r0;
    for (size_t i = outer; i-- > 0;) {
      idx[i] = rem % dims_[i];
      rem /= dims_[i];
      for (size_t k = 0; k < N; ++k) off[k] += idx[i] * strides_[k][i];
    }
    const size_t len = dims_.back();
    for (size_t row = r0; row < r1; ++row) {
      fn(row * len, off);
      for (size_t i = outer; i-- > 0;) {  // odometer step
        for (size_t k = 0; k < N; ++k) off[k] += strides_[k][i];
        if (++idx[i] < dims_[i]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= dims_[i] * strides_[k][i];
        idx[i] = 0;
      }
    }
  }

  // for_rows over every row, in parallel parts of at least ~16K elements.
  template <typename Fn>
  void run(ThreadPool& pool, Fn&& fn) const {
    const size_t len = std::max<size_t>(1, dims_.back());
    const size_t per_part = std::max<size_t>(1, 16384 / len);
    const size_t parts = (rows_ + per_part - 1) / per_part;
    if (parts <= 1) {
      for_rows(0, rows_, fn);
      return;
    }
    pool.run(parts, [&](size_t i, size_t) { for_rows(i * per_part, std::min(rows_, (i + 1) * per_part), fn); });
  }

 private:
  std::vector<size_t> dims_;
  std::array<std::vector<size_t>, N> strides_;
  size_t rows_ = 1;
};

}  // namespace nfuse::backends::cpu
