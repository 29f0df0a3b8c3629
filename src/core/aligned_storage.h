// 64-byte aligned storage for prepacked weights and per-worker scratch (the cpu and fusion
// backends; a GPU backend's host staging too).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <vector>

namespace nfuse {

// 64-byte aligned float storage, owned; for prepacked weights and scratch.
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(size_t n) { resize(n); }
  // Discards contents; zero-fills. False when memory runs out.
  bool resize(size_t n);
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  size_t size() const { return size_; }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  size_t size_ = 0;
};

// Per-thread scratch: one buffer per worker, sized for the largest op of the partition.
class Scratch {
 public:
  // Makes every worker's buffer at least `floats` long; false when memory runs out.
  bool reserve(size_t workers, size_t floats);
  float* get(size_t worker) { return buffers_[worker].data(); }
  size_t floats() const { return buffers_.empty() ? 0 : buffers_[0].size(); }

 private:
  std::vector<AlignedFloats> buffers_;
};

}  // namespace nfuse
