// How a GEMM's M x N output is split into tasks for the intra-op pool, shared by the f32 and
// int8 GEMM families (f32-gemm, qu8-gemm): the split depends only on the tile sizes, the shape
// and the thread count, never on the element type.
#pragma once

#include <cstddef>

namespace nfuse::kernels {

// A split of the M x N output into m_count x n_count rectangular tasks of m_step x n_step.
struct GemmTasks {
  size_t m_step = 0, n_step = 0;
  size_t m_count = 0, n_count = 0;
  size_t count() const { return m_count * n_count; }
  // Rows [*m0, *m1) and columns [*n0, *n1) of task `index` (< count()) for an m x n output.
  void range(size_t index, size_t m, size_t n, size_t* m0, size_t* m1, size_t* n0, size_t* n1) const;
};

// How to split when M has fewer row tiles than the tasks wanted. kRowsFirst: a row tile per M
// range, N split for the rest. kFewestReads: the split that re-reads the fewest operand elements
// (an M range reads all of its columns of B, an N range packs all of its rows of A), which is
// what the f32 driver costs. The int8 and int16 families keep kRowsFirst: their B is a quarter
// or half the bytes and some callers swap the operands' roles, and kFewestReads measured slower
// for them (bench/RESULTS.md, 2026-12-06, eighteenth session).
enum class GemmSplit { kRowsFirst, kFewestReads };

// Splits an m x n output (inner dimension k) of mr x nr tiles into tasks for `threads`
// workers: up to 4 per worker to balance the load, none smaller than ~64K multiply-adds. M is
// split first (tasks share packed B and pack disjoint rows of A) while it has a row tile per
// task; with fewer, by `rule`. One task when threads <= 1.
GemmTasks gemm_tasks(size_t mr, size_t nr, size_t m, size_t n, size_t k, size_t threads,
                     GemmSplit rule = GemmSplit::kRowsFirst);

}  // namespace nfuse::kernels
