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

}  // namespace nfuse
