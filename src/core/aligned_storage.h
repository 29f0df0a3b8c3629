// 64-byte aligned storage for prepacked weights and per-worker scratch (the cpu and fusion
// backends; a GPU backend's host staging too).
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <utility>
#include <vector>

namespace nfuse {

// 64-byte aligned float storage, owned; for prepacked weights and scratch.
class AlignedFloats {
 public:
  AlignedFloats() = default;
  explicit AlignedFloats(size_t n) { resize(n); }
  AlignedFloats(AlignedFloats&& other) noexcept
      : raw_(std::move(other.raw_)), data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}
  AlignedFloats& operator=(AlignedFloats&& other) noexcept {
    raw_ = std::move(other.raw_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    return *this;
  }
  // Discards contents; zero-fills. False when memory runs out.
  bool resize(size_t n);
  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  static constexpr size_t kMappedBytes = size_t(1) << 20;
  struct Free {
    Free() : mapped_bytes(0) {}
    explicit Free(size_t mapped) : mapped_bytes(mapped) {}
    void operator()(void* p) const;
    size_t mapped_bytes;  // 0: from calloc
  };
  std::unique_ptr<void, Free> raw_;
  float* data_ = nullptr;  // raw_ rounded up to 64 bytes
  size_t size_ = 0;
};

// Prepacked weights: owned (packed here, 64-byte aligned, shared by copies) or borrowed from a
// context binary's read-only mapping (kept alive by `keepalive`). Filled once through data()
// when owned, read-only afterwards; a borrowed buffer must never be written.
class PackedFloats {
 public:
  PackedFloats() = default;
  // A new owned, zero-filled buffer of n floats; false when memory runs out.
  bool resize(size_t n);
  static PackedFloats borrow(const float* data, size_t n, std::shared_ptr<const void> keepalive);
  float* data() { return data_; }
  const float* data() const { return data_; }
  size_t size() const { return size_; }
  bool borrowed() const { return borrowed_; }

 private:
  std::shared_ptr<const void> owner_;
  float* data_ = nullptr;
  size_t size_ = 0;
  bool borrowed_ = false;
};

// Floats rounded up to whole 64-byte lines: per-worker buffers laid end to end stay aligned.
inline size_t round_to_lines(size_t floats) { return (floats + 15) / 16 * 16; }

// Per-thread scratch: one buffer per worker, sized for the largest op of the partition; or a
// view of memory someone else owns (a span of the plan's arena, borrow()).
class Scratch {
 public:
  // Makes every worker's buffer at least `floats` long (owned; ends a borrow); false when
  // memory runs out.
  bool reserve(size_t workers, size_t floats);
  // Worker w's buffer is `floats` floats at base + w * floats (base 64-byte aligned, floats a
  // multiple of 16, so every worker's buffer is aligned too).
  void borrow(float* base, size_t floats);
  float* get(size_t worker) { return borrowed_ ? borrowed_ + worker * borrowed_floats_ : buffers_[worker].data(); }
  size_t floats() const {
    if (borrowed_) return borrowed_floats_;
    return buffers_.empty() ? 0 : buffers_[0].size();
  }

 private:
  std::vector<AlignedFloats> buffers_;
  float* borrowed_ = nullptr;
  size_t borrowed_floats_ = 0;
};

}  // namespace nfuse
