// The portable kernel of x8_checksum.h, the tail and final mix, and the per-ISA selection.
#include "kernels/x8-checksum/x8_checksum.h"

#include <cstring>

namespace nfuse::kernels {

const uint64_t kChecksumKey[kChecksumLanes] = {
    0xC2B2AE3D27D4EB4Full, 0x165667B19E3779F9ull, 0x85EBCA77C2B2AE63ull, 0x27D4EB2F165667C5ull,
    0x9FB21C651E98DF25ull, 0xFF51AFD7ED558CCDull, 0xC4CEB9FE1A85EC53ull, 0x94D049BB133111EBull,
};

namespace {

inline uint64_t load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;  // little-endian hosts only (x86-64, aarch64), as the context format is
}

inline void stripe(const uint8_t* p, size_t j, uint64_t acc[kChecksumLanes]) {
  uint64_t x[kChecksumLanes];
  for (size_t i = 0; i < kChecksumLanes; ++i) x[i] = load64(p + 8 * i);
  for (size_t i = 0; i < kChecksumLanes; ++i) {
    const uint64_t k = x[i] ^ (kChecksumKey[i] + j * kChecksumStep);
    acc[i] += (k & 0xFFFFFFFFull) * (k >> 32) + x[i ^ 1];
  }
}

inline uint64_t avalanche(uint64_t h) {
  h ^= h >> 33;
  h *= 0xC2B2AE3D27D4EB4Full;
  h ^= h >> 29;
  h *= 0x165667B19E3779F9ull;
  h ^= h >> 32;
  return h;
}

}  // namespace

void x8_checksum_blocks__scalar(const uint8_t* data, size_t blocks, uint64_t acc[kChecksumLanes]) {
  for (size_t b = 0; b < blocks; ++b) {
    const uint8_t* block = data + b * kChecksumStripesPerBlock * kChecksumStripeBytes;
    for (size_t j = 0; j < kChecksumStripesPerBlock; ++j) stripe(block + j * kChecksumStripeBytes, j, acc);
    for (size_t i = 0; i < kChecksumLanes; ++i) acc[i] = (acc[i] ^ (acc[i] >> 47) ^ kChecksumKey[i]) * kChecksumPrime32;
  }
}

X8ChecksumBlocksFn x8_checksum_select(Isa isa) {
#if defined(__x86_64__) && defined(NFUSE_HAVE_AVX512_KERNELS)
  if (isa == Isa::kAvx512) return x8_checksum_blocks__avx512;
#endif
#if defined(__x86_64__)
  if (isa == Isa::kAvx2Fma || isa == Isa::kAvx512) return x8_checksum_blocks__avx2;
#endif
  (void)isa;
  return x8_checksum_blocks__scalar;
}

uint64_t x8_checksum(const void* data, size_t size, Isa isa) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint64_t acc[kChecksumLanes];
  for (size_t i = 0; i < kChecksumLanes; ++i) acc[i] = kChecksumKey[(i + 3) % kChecksumLanes];
  constexpr size_t kBlockBytes = kChecksumStripesPerBlock * kChecksumStripeBytes;
  const size_t blocks = size / kBlockBytes;
  if (blocks) x8_checksum_select(isa)(p, blocks, acc);
  size_t at = blocks * kBlockBytes;
  size_t j = 0;
  for (; at + kChecksumStripeBytes <= size; at += kChecksumStripeBytes, ++j) stripe(p + at, j, acc);
  if (at < size) {
    uint8_t last[kChecksumStripeBytes] = {};
    std::memcpy(last, p + at, size - at);
    stripe(last, j, acc);
  }
  uint64_t h = static_cast<uint64_t>(size) * 0x27D4EB2F165667C5ull;
  for (size_t i = 0; i < kChecksumLanes; ++i) h = (h ^ avalanche(acc[i] + kChecksumKey[i])) * 0x9E3779B185EBCA87ull;
  return avalanche(h);
}

uint64_t x8_checksum(const void* data, size_t size) { return x8_checksum(data, size, selected_isa()); }

}  // namespace nfuse::kernels
