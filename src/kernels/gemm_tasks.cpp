#include "kernels/gemm_tasks.h"

namespace nfuse::kernels {
namespace {

// Smallest amount of work (multiply-adds) worth a task of its own: below it the packing and
// dispatch overheads dominate.
constexpr size_t kMinTaskMacs = size_t{1} << 16;

size_t div_up(size_t x, size_t y) { return (x + y - 1) / y; }

}  // namespace

GemmTasks gemm_tasks(size_t mr, size_t nr, size_t m, size_t n, size_t k, size_t threads, GemmSplit rule) {
  const size_t rows = m > 0 ? m : 1, cols = n > 0 ? n : 1, depth = k > 0 ? k : 1;
  const size_t m_tiles = div_up(rows, mr);
  const size_t n_tiles = div_up(cols, nr);
  const size_t max_tasks = m * n * depth / kMinTaskMacs + 1;
  size_t target = threads > 1 ? threads * 4 : 1;  // 4 per thread evens out uneven task costs
  target = target < max_tasks ? target : max_tasks;
  auto split = [&](size_t m_want, size_t n_want) {
    GemmTasks t;
    t.m_step = div_up(m_tiles, m_want) * mr;
    t.n_step = div_up(n_tiles, n_want) * nr;
    t.m_count = div_up(rows, t.m_step);
    t.n_count = div_up(cols, t.n_step);
    return t;
  };
  // Enough row tiles: M ranges only, each packing its own rows of A and sharing packed B.
  if (m_tiles >= target) return split(target, 1);
  if (rule == GemmSplit::kRowsFirst) return split(m_tiles, div_up(target, m_tiles));
  // Fewer row tiles than tasks: M ranges of a tile or two would each stream all of their
  // columns of B for a dozen rows (a 7x7 map's pixels against megabytes of weights), which is
  // memory-bound however many threads share it. Every M range reads B's columns and every N
  // range packs A's rows, so of the splits whose task count falls least short of the target
  // (counts above it count as reaching it), the one that reads the fewest elements (ties: fewer
  // M ranges).
  const size_t tiles = m_tiles * n_tiles;
  const size_t want = target < tiles ? target : tiles;
  GemmTasks best;
  size_t best_short = 0, best_reads = 0;
  for (size_t m_want = 1; m_want <= m_tiles; ++m_want) {
    const GemmTasks t = split(m_want, div_up(want, m_want) < n_tiles ? div_up(want, m_want) : n_tiles);
    const size_t short_by = t.count() < want ? want - t.count() : 0;
    const size_t reads = rows * depth * t.n_count + depth * cols * t.m_count;
    if (best.count() == 0 || short_by < best_short || (short_by == best_short && reads < best_reads)) {
      best = t;
      best_short = short_by;
      best_reads = reads;
    }
  }
  return best;
}

void GemmTasks::range(size_t index, size_t m, size_t n, size_t* m0, size_t* m1, size_t* n0, size_t* n1) const {
  *m0 = index / n_count * m_step;
  *n0 = index % n_count * n_step;
  *m1 = *m0 + m_step < m ? *m0 + m_step : m;
  *n1 = *n0 + n_step < n ? *n0 + n_step : n;
  if (*m1 < *m0) *m1 = *m0;
  if (*n1 < *n0) *n1 = *n0;
}

}  // namespace nfuse::kernels
