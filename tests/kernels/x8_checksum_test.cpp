// x8_checksum.h: every ISA's block kernel gives the portable kernel's value (a binary written
// on one CPU verifies on another) at every length 0..3000, from unaligned starts; any
// single-bit flip, two swapped stripes (in one block and across blocks), a zero byte appended
// and a truncation each change the value.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "kernels/x8-checksum/x8_checksum.h"
#include "support/kernel_isas.h"

namespace nfuse::kernels {
namespace {

std::vector<uint8_t> random_bytes(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::vector<uint8_t> v(n);
  for (uint8_t& b : v) b = static_cast<uint8_t>(rng());
  return v;
}

TEST(X8Checksum, EveryIsaGivesThePortableValue) {
  const std::vector<uint8_t> bytes = random_bytes(3 * 4096 + 200, 7);
  for (Isa isa : test::available_isas()) {
    for (size_t offset : {size_t{0}, size_t{1}, size_t{13}}) {
      for (size_t n = 0; n <= 3000; n += (n < 300 ? 1 : 37)) {
        ASSERT_EQ(x8_checksum(bytes.data() + offset, n, isa), x8_checksum(bytes.data() + offset, n, Isa::kScalar))
            << isa_name(isa) << " n " << n << " offset " << offset;
      }
      const size_t big = bytes.size() - offset;
      ASSERT_EQ(x8_checksum(bytes.data() + offset, big, isa), x8_checksum(bytes.data() + offset, big, Isa::kScalar))
          << isa_name(isa);
    }
  }
}

TEST(X8Checksum, EverySingleBitFlipShows) {
  for (size_t n : {size_t{1}, size_t{63}, size_t{64}, size_t{2048}, size_t{2048 * 2 + 100}}) {
    std::vector<uint8_t> bytes = random_bytes(n, static_cast<unsigned>(n));
    for (Isa isa : test::available_isas()) {
      const uint64_t base = x8_checksum(bytes.data(), n, isa);
      for (size_t byte = 0; byte < n; byte += (n > 300 ? 7 : 1)) {
        for (int bit = 0; bit < 8; ++bit) {
          bytes[byte] ^= static_cast<uint8_t>(1u << bit);
          ASSERT_NE(x8_checksum(bytes.data(), n, isa), base)
              << isa_name(isa) << " n " << n << " " << byte << ":" << bit;
          bytes[byte] ^= static_cast<uint8_t>(1u << bit);
        }
      }
    }
  }
}

TEST(X8Checksum, ReorderingAndLengthShow) {
  const size_t n = 3 * kChecksumStripesPerBlock * kChecksumStripeBytes;
  const std::vector<uint8_t> bytes = random_bytes(n, 3);
  for (Isa isa : test::available_isas()) {
    const uint64_t base = x8_checksum(bytes.data(), n, isa);
    auto swapped = [&](size_t a, size_t b) {
      std::vector<uint8_t> v = bytes;
      for (size_t i = 0; i < kChecksumStripeBytes; ++i)
        std::swap(v[a * kChecksumStripeBytes + i], v[b * kChecksumStripeBytes + i]);
      return x8_checksum(v.data(), n, isa);
    };
    EXPECT_NE(swapped(0, 1), base) << isa_name(isa) << ": stripes in one block";
    EXPECT_NE(swapped(3, 3 + kChecksumStripesPerBlock), base) << isa_name(isa) << ": the same stripe of two blocks";
    std::vector<uint8_t> longer = bytes;
    longer.push_back(0);
    EXPECT_NE(x8_checksum(longer.data(), longer.size(), isa), base) << isa_name(isa) << ": a zero byte appended";
    EXPECT_NE(x8_checksum(bytes.data(), n - 1, isa), base) << isa_name(isa) << ": truncated";
    EXPECT_NE(x8_checksum(bytes.data(), 0, isa), x8_checksum(bytes.data(), 1, isa)) << isa_name(isa);
  }
}

}  // namespace
}  // namespace nfuse::kernels
