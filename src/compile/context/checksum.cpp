#include "compile/context/checksum.h"

#include <cstring>

namespace nfuse::context {
namespace {

constexpr uint64_t kPrime1 = 0x9E3779B185EBCA87ull;
constexpr uint64_t kPrime2 = 0xC2B2AE3D27D4EB4Full;
constexpr uint64_t kPrime3 = 0x165667B19E3779F9ull;

inline uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
inline uint64_t load64(const unsigned char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
// Each word enters its lane multiplied by an odd constant and rotated: a flipped bit changes the
// lane, and the final mix spreads every lane over the result.
inline uint64_t round(uint64_t acc, uint64_t word) { return rotl(acc + word * kPrime2, 31) * kPrime1; }

}  // namespace

uint64_t checksum64(const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  uint64_t lane[4] = {kPrime1 + kPrime2, kPrime2, 0, 0 - kPrime1};
  size_t i = 0;
  for (; i + 32 <= size; i += 32) {
    lane[0] = round(lane[0], load64(p + i));
    lane[1] = round(lane[1], load64(p + i + 8));
    lane[2] = round(lane[2], load64(p + i + 16));
    lane[3] = round(lane[3], load64(p + i + 24));
  }
  uint64_t h = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18);
  h += static_cast<uint64_t>(size) * kPrime3;
  for (; i + 8 <= size; i += 8) h = rotl(h ^ round(0, load64(p + i)), 27) * kPrime1 + kPrime3;
  for (; i < size; ++i) h = rotl(h ^ (p[i] * kPrime3), 11) * kPrime1;
  h ^= h >> 33;
  h *= kPrime2;
  h ^= h >> 29;
  h *= kPrime3;
  h ^= h >> 32;
  return h;
}

}  // namespace nfuse::context
