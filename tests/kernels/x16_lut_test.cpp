// The 16-bit table lookup (src/kernels/x16-lut/x16_lut.h) against table indexing: every index,
// lengths 0..40 around the 8-element step, in place, and the s16 index table's rotation.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "kernels/x16-lut/x16_lut.h"

namespace nfuse::kernels {
namespace {

std::vector<uint16_t> table() {
  std::vector<uint16_t> t(kX16LutEntries);
  for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<uint16_t>(i * 2654435761u >> 7);
  return t;
}

TEST(X16Lut, EveryIndexAndLength) {
  const std::vector<uint16_t> t = table();
  std::vector<uint16_t> x(65536 + 40), y(x.size());
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(i * 40503 + 11);
  x16_lut__scalar_u8(x.data(), y.data(), 65536, t.data());
  for (size_t i = 0; i < 65536; ++i) ASSERT_EQ(y[i], t[x[i]]) << i;
  for (size_t n = 0; n <= 40; ++n) {
    std::vector<uint16_t> out(n + 1, 0xBEEF);
    x16_lut__scalar_u8(x.data() + 3, out.data(), n, t.data());
    for (size_t i = 0; i < n; ++i) ASSERT_EQ(out[i], t[x[3 + i]]) << "n " << n << " i " << i;
    EXPECT_EQ(out[n], 0xBEEF) << "wrote past n = " << n;
  }
}

TEST(X16Lut, InPlaceAndSignedRotation) {
  const std::vector<uint16_t> t = table();
  std::vector<uint16_t> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(i * 977);
  std::vector<uint16_t> expected(x.size());
  for (size_t i = 0; i < x.size(); ++i) expected[i] = t[x[i]];
  x16_lut__scalar_u8(x.data(), x.data(), x.size(), t.data());
  EXPECT_EQ(x, expected);
  // s16 input v indexes the op's table at v + 32768: the rotated table read at the raw bits.
  std::vector<uint16_t> rotated(kX16LutEntries);
  x16_lut_index_table(t.data(), true, rotated.data());
  for (int v : {-32768, -1, 0, 1, 32767}) {
    EXPECT_EQ(rotated[static_cast<uint16_t>(v)], t[static_cast<size_t>(v + 32768)]) << v;
  }
}

}  // namespace
}  // namespace nfuse::kernels
