#include "core/thread_pool.h"

#include <pthreadpool.h>

#include <atomic>

namespace nfuse {
namespace {

struct Shared {
  TaskFn fn;
  size_t count;
  std::atomic<size_t> next{0};
};

// pthreadpool runs item `worker` of [0, workers) once; each item drains the shared counter, so
// the worker index it hands to tasks is unique among the items running concurrently.
void drain(void* context, size_t worker) {
  auto* s = static_cast<Shared*>(context);
  for (size_t t = s->next.fetch_add(1, std::memory_order_relaxed); t < s->count;
       t = s->next.fetch_add(1, std::memory_order_relaxed)) {
    s->fn(t, worker);
  }
}

}  // namespace

ThreadPool::ThreadPool(int threads) : threads_(threads > 1 ? static_cast<size_t>(threads) : 1) {
  if (threads_ > 1) {
    pool_ = pthreadpool_create(threads_);
    if (!pool_) threads_ = 1;  // no pool: run on the caller (still correct, just serial)
  }
}

ThreadPool::~ThreadPool() {
  if (pool_) pthreadpool_destroy(pool_);
}

void ThreadPool::parallel_for(size_t count, TaskFn fn) {
  if (count == 0) return;
  if (!pool_ || count == 1) {
    for (size_t t = 0; t < count; ++t) fn(t, 0);
    return;
  }
  Shared s{fn, count};
  const size_t workers = count < threads_ ? count : threads_;
  pthreadpool_parallelize_1d(pool_, drain, &s, workers, 0);
}

}  // namespace nfuse
