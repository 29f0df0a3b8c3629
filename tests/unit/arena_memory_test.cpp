#include "runtime/arena_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

namespace nfuse::runtime {
namespace {

TEST(ArenaMemory, EverySizeIsAlignedAndWritableToItsLastByte) {
  const size_t huge = kHugePageArenaBytes;
  for (size_t bytes : {size_t{1}, size_t{63}, size_t{64}, size_t{1000}, huge - 1, huge, huge + 1, 5 * huge + 77}) {
    SCOPED_TRACE(bytes);
    bool advised = true;
    std::shared_ptr<void> arena = allocate_arena(bytes, &advised);
    ASSERT_NE(arena, nullptr);
    const auto address = reinterpret_cast<uintptr_t>(arena.get());
    EXPECT_EQ(address % 64, 0u);
    // Only large arenas are offered huge pages, and those start on a huge-page boundary so that
    // none of their huge pages is cut by the arena's edge.
    if (bytes < huge) {
      EXPECT_FALSE(advised);
    }
#if defined(__linux__)
    if (bytes >= huge) {
      EXPECT_EQ(address % huge, 0u);
    }
#endif
    // The whole rounded-up size belongs to the caller (the session fills it with a NaN pattern).
    const size_t rounded = (bytes + 63) / 64 * 64;
    auto* p = static_cast<uint8_t*>(arena.get());
    std::memset(p, 0xA5, rounded);
    EXPECT_EQ(p[0], 0xA5);
    EXPECT_EQ(p[rounded - 1], 0xA5);
  }
}

TEST(ArenaMemory, EmptyArenaIsNull) {
  bool advised = true;
  EXPECT_EQ(allocate_arena(0, &advised), nullptr);
  EXPECT_FALSE(advised);
}

}  // namespace
}  // namespace nfuse::runtime
