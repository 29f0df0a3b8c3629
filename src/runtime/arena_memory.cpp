#include "runtime/arena_memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace nfuse::runtime {

std::shared_ptr<void> allocate_arena(size_t bytes, bool* huge_pages) {
  if (huge_pages) *huge_pages = false;
  if (bytes == 0) return nullptr;
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (bytes >= kHugePageArenaBytes) {
    // Map one huge page more than needed and use the 2 MiB-aligned part, so every huge page the
    // kernel can give is fully inside the arena.
    const size_t huge = kHugePageArenaBytes;
    const size_t length = (bytes + huge - 1) / huge * huge;
    const size_t mapped = length + huge;
    void* raw = mmap(nullptr, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw != MAP_FAILED) {
      const auto base = reinterpret_cast<uintptr_t>(raw);
      const uintptr_t aligned = (base + huge - 1) / huge * huge;
      // Only whole huge pages of the arena are advised: a partly used last one would make its
      // unused part resident too (a 6.9 MiB arena held 8 MiB). A kernel without transparent huge
      // pages refuses the advice; the mapping still works.
      const size_t whole = bytes / huge * huge;
      const bool advised = madvise(reinterpret_cast<void*>(aligned), whole, MADV_HUGEPAGE) == 0;
      if (huge_pages) *huge_pages = advised;
      return std::shared_ptr<void>(reinterpret_cast<void*>(aligned),
                                   [raw, mapped](void*) { munmap(raw, mapped); });
    }
    // Out of address space for the padded mapping: the heap may still have room.
  }
#endif
  void* mem = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (!mem) return nullptr;
  return std::shared_ptr<void>(mem, [](void* q) { std::free(q); });
}

bool arena_poison_enabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("NFUSE_POISON_ARENA");
    return v && std::strcmp(v, "0") != 0 && *v != '\0';
  }();
  return enabled;
}

}  // namespace nfuse::runtime
