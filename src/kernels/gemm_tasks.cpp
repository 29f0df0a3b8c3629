#include "kernels/gemm_tasks.h"

namespace nfuse::kernels {
namespace {

// Smallest amount of work (multiply-adds) worth a task of its own: below it the packing and
// dispatch overheads dominate.
constexpr size_t kMinTaskMacs = size_t{1} << 16;

size_t div_up(size_t x, size_t y) { return (x + y - 1) / y; }

}  // namespace

GemmTasks gemm_tasks(size_t mr, size_t nr, size_t m, size_t n, size_t k, size_t threads) {
  const size_t m_tiles = div_up(m > 0 ? m : 1, mr);
  const size_t n_tiles = div_up(n > 0 ? n : 1, nr);
  const size_t max_tasks = m * n * (k > 0 ? k : 1) / kMinTaskMacs + 1;
  size_t target = threads > 1 ? threads * 4 : 1;  // 4 per thread evens out uneven task costs
  target = target < max_tasks ? target : max_tasks;
  const size_t m_count = target < m_tiles ? target : m_tiles;
  const size_t n_want = div_up(target, m_count);
  const size_t n_count = n_want < n_tiles ? n_want : n_tiles;
  GemmTasks t;
  t.m_step = div_up(m_tiles, m_count) * mr;
  t.n_step = div_up(n_tiles, n_count) * nr;
  t.m_count = div_up(m > 0 ? m : 1, t.m_step);
  t.n_count = div_up(n > 0 ? n : 1, t.n_step);
  return t;
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
