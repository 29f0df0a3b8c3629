// The block of memory a plan's arena lives in. Large arenas are mapped on 2 MiB boundaries and
// offered to the kernel for transparent huge pages: a 960x960 model streams tens of MiB through
// its arena every run, and with 4 KiB pages the convolutions' many concurrent row streams miss
// the TLB (layer by layer, the OCR detector and lraspp at 960 ran about 5% faster on huge pages).
#pragma once

#include <cstddef>
#include <memory>

namespace nfuse::runtime {

// Arenas of at least this many bytes are mapped for huge pages; smaller ones come from the heap.
inline constexpr size_t kHugePageArenaBytes = size_t(2) << 20;

// `bytes` (> 0) rounded up to a multiple of 64, aligned to at least 64; null when out of memory.
// `huge_pages`, when given, tells whether the block was mapped and advised for huge pages (the
// kernel may still decline them: the advice is a hint).
std::shared_ptr<void> allocate_arena(size_t bytes, bool* huge_pages = nullptr);

// Whether new arenas are filled with 0xFF bytes (NaN as f32), so that a kernel that leaves
// elements unwritten shows as NaN in every comparison: set by NFUSE_POISON_ARENA=1 in the
// environment (the test suites set it). Off otherwise: filling touches every arena page before
// the first inference needs it (tens of MiB at 960x960, most of a context binary's load time).
bool arena_poison_enabled();

}  // namespace nfuse::runtime
