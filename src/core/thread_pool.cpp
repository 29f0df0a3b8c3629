#include "core/thread_pool.h"

#include <pthreadpool.h>

#include <atomic>
#include <chrono>

namespace nfuse {
namespace {

thread_local WorkerSpanRecorder* t_recorder = nullptr;

double now_us() { return steady_us(std::chrono::steady_clock::now()); }

struct Shared {
  TaskFn fn;
  size_t count;
  std::atomic<size_t> next{0};
  WorkerSpan* spans = nullptr;  // one per worker while profiling, else null
};

// pthreadpool runs item `worker` of [0, workers) once; each item drains the shared counter, so
// the worker index it hands to tasks is unique among the items running concurrently.
void drain(void* context, size_t worker) {
  auto* s = static_cast<Shared*>(context);
  const double start = s->spans ? now_us() : 0.0;
  bool ran = false;
  for (size_t t = s->next.fetch_add(1, std::memory_order_relaxed); t < s->count;
       t = s->next.fetch_add(1, std::memory_order_relaxed)) {
    s->fn(t, worker);
    ran = true;
  }
  if (s->spans && ran) s->spans[worker] = WorkerSpan{worker, start, now_us(), nullptr};
}

}  // namespace

WorkerSpanRecorder* set_worker_span_recorder(WorkerSpanRecorder* recorder) {
  WorkerSpanRecorder* previous = t_recorder;
  t_recorder = recorder;
  return previous;
}

WorkerSpanRecorder* worker_span_recorder() { return t_recorder; }

ThreadPool::ThreadPool(int threads) : threads_(threads > 1 ? static_cast<size_t>(threads) : 1) {
  if (threads_ > 1) {
    pool_ = pthreadpool_create(threads_);
    if (!pool_) threads_ = 1;  // no pool: run on the caller (still correct, just serial)
  }
  active_.store(threads_, std::memory_order_relaxed);
}

void ThreadPool::park() {
  if (!pool_) return;
  pthreadpool_parallelize_1d(
      pool_, [](void*, size_t) {}, nullptr, threads_, PTHREADPOOL_FLAG_YIELD_WORKERS);
}

namespace {

struct EachThread {
  const std::function<void(size_t)>* fn;
  size_t threads;
  std::atomic<size_t> arrived{0};
};

// pthreadpool gives each of its threads one item of a range as long as the thread count before
// stealing; an item that waits until all have started therefore runs on a thread of its own.
void run_on_thread(void* context, size_t worker) {
  auto* e = static_cast<EachThread*>(context);
  e->arrived.fetch_add(1, std::memory_order_acq_rel);
  while (e->arrived.load(std::memory_order_acquire) < e->threads) {
  }
  (*e->fn)(worker);
}

}  // namespace

void ThreadPool::on_each_thread(const std::function<void(size_t)>& fn) {
  if (!pool_) {
    fn(0);
    return;
  }
  EachThread e{&fn, threads_};
  pthreadpool_parallelize_1d(pool_, run_on_thread, &e, threads_, 0);
}

ThreadPool::~ThreadPool() {
  if (pool_) pthreadpool_destroy(pool_);
}

void ThreadPool::parallel_for(size_t count, TaskFn fn) {
  if (count == 0) return;
  WorkerSpanRecorder* recorder = t_recorder;
  const size_t active = active_.load(std::memory_order_relaxed);
  if (!pool_ || count == 1 || active == 1) {
    const double start = recorder ? now_us() : 0.0;
    for (size_t t = 0; t < count; ++t) fn(t, 0);
    if (recorder) recorder->spans.push_back(WorkerSpan{0, start, now_us(), recorder->tag});
    return;
  }
  Shared s{fn, count};
  const size_t workers = count < active ? count : active;
  std::vector<WorkerSpan> spans(recorder ? workers : 0, WorkerSpan{0, 0.0, -1.0, nullptr});
  s.spans = recorder ? spans.data() : nullptr;
  pthreadpool_parallelize_1d(pool_, drain, &s, workers,
                             workers_spin_.load(std::memory_order_relaxed) ? 0 : PTHREADPOOL_FLAG_YIELD_WORKERS);
  for (WorkerSpan& w : spans) {
    if (w.end_us < 0) continue;  // ran no task
    w.tag = recorder->tag;
    recorder->spans.push_back(w);
  }
}

}  // namespace nfuse
