#include "core/aligned_storage.h"

#include <algorithm>

namespace nfuse {

bool AlignedFloats::resize(size_t n) {
  data_.reset();
  size_ = 0;
  if (n == 0) return true;
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
  auto* p = static_cast<float*>(std::aligned_alloc(64, bytes));
  if (!p) return false;
  std::fill(p, p + bytes / sizeof(float), 0.0f);
  data_.reset(p);
  size_ = n;
  return true;
}

bool Scratch::reserve(size_t workers, size_t floats) {
  if (buffers_.size() < workers) buffers_.resize(workers);
  for (AlignedFloats& b : buffers_)
    if (b.size() < floats && !b.resize(floats)) return false;
  return true;
}

bool PackedFloats::resize(size_t n) {
  auto owned = std::make_shared<AlignedFloats>();
  if (!owned->resize(n)) return false;
  data_ = owned->data();
  size_ = n;
  borrowed_ = false;
  owner_ = std::move(owned);
  return true;
}

PackedFloats PackedFloats::borrow(const float* data, size_t n, std::shared_ptr<const void> keepalive) {
  PackedFloats p;
  p.data_ = const_cast<float*>(data);  // never written: see the class comment
  p.size_ = n;
  p.borrowed_ = true;
  p.owner_ = std::move(keepalive);
  return p;
}

}  // namespace nfuse
