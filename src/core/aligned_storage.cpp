#include "core/aligned_storage.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace nfuse {

bool AlignedFloats::resize(size_t n) {
  raw_.reset();
  data_ = nullptr;
  size_ = 0;
  if (n == 0) return true;
  // Zero pages, not a fill: a block's pages are only touched (and made resident) when a kernel
  // first uses them, so a session's scratch sized for its largest op costs nothing at creation.
  // Large blocks are mapped (calloc would clear memory the heap reuses); small ones come from
  // calloc.
  const size_t bytes = (n * sizeof(float) + 63) / 64 * 64;
#if defined(__linux__)
  if (bytes >= kMappedBytes) {
    void* p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return false;
    raw_ = std::unique_ptr<void, Free>(p, Free{bytes});
    data_ = static_cast<float*>(p);
    size_ = n;
    return true;
  }
#endif
  void* raw = std::calloc(bytes + 64, 1);
  if (!raw) return false;
  raw_ = std::unique_ptr<void, Free>(raw, Free{0});
  data_ = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(raw) + 63) / 64 * 64);
  size_ = n;
  return true;
}

void AlignedFloats::Free::operator()(void* p) const {
#if defined(__linux__)
  if (mapped_bytes) {
    ::munmap(p, mapped_bytes);
    return;
  }
#endif
  std::free(p);
}

bool Scratch::reserve(size_t workers, size_t floats) {
  borrowed_ = nullptr;
  borrowed_floats_ = 0;
  if (buffers_.size() < workers) buffers_.resize(workers);
  for (AlignedFloats& b : buffers_)
    if (b.size() < floats && !b.resize(floats)) return false;
  return true;
}

void Scratch::borrow(float* base, size_t floats) {
  borrowed_ = base;
  borrowed_floats_ = floats;
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
