#include "core/thread_pool.h"

#include <algorithm>

#include <pthread.h>
#include <sched.h>

namespace nfuse {
namespace {

thread_local WorkerSpanRecorder* t_recorder = nullptr;

double now_us() { return steady_us(std::chrono::steady_clock::now()); }

}  // namespace

WorkerSpanRecorder* set_worker_span_recorder(WorkerSpanRecorder* recorder) {
  WorkerSpanRecorder* previous = t_recorder;
  t_recorder = recorder;
  return previous;
}

WorkerSpanRecorder* worker_span_recorder() { return t_recorder; }

ThreadPool::ThreadPool(int threads) : threads_(threads > 1 ? static_cast<size_t>(threads) : 1) {
  active_.store(threads_, std::memory_order_relaxed);
  try {
    for (size_t i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { worker_main(i); });
  } catch (const std::system_error&) {
    threads_ = workers_.size() + 1;  // fewer threads than asked: still correct, less parallel
    active_.store(threads_, std::memory_order_relaxed);
  }
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(sleep_mutex_);
    stop_.store(true, std::memory_order_seq_cst);
  }
  sleep_cv_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void ThreadPool::pin_workers(const std::vector<int>& cpus) {
  static const cpu_set_t anywhere = [] {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof(set), &set) != 0)
      for (int c = 0; c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
    return set;
  }();
  for (size_t w = 1; w <= workers_.size(); ++w) {
    cpu_set_t mask = anywhere;
    if (!cpus.empty()) {
      CPU_ZERO(&mask);
      CPU_SET(cpus[w % cpus.size()], &mask);
    }
    (void)pthread_setaffinity_np(workers_[w - 1].native_handle(), sizeof(mask), &mask);
  }
}

void ThreadPool::park() { park_epoch_.fetch_add(1, std::memory_order_relaxed); }

void ThreadPool::drain(Section& s, size_t worker) {
  const double start = s.spans ? now_us() : 0.0;
  bool ran = false;
  for (;;) {
    if (s.must < s.count && s.next.load(std::memory_order_relaxed) >= s.must && yield_requested()) break;
    const size_t t = s.next.fetch_add(1, std::memory_order_relaxed);
    if (t >= s.count) break;
    s.fn(t, worker);
    ran = true;
  }
  if (s.spans && ran) s.spans[worker] = WorkerSpan{worker, start, now_us(), nullptr};
}

bool ThreadPool::join(uint64_t seen) {
  uint64_t s = state_.load(std::memory_order_acquire);
  while ((s >> 32) == (seen >> 32) && !(s & kClosed)) {
    if (state_.compare_exchange_weak(s, s + 1, std::memory_order_acq_rel, std::memory_order_acquire)) return true;
  }
  return false;
}

void ThreadPool::worker_main(size_t index) {
  uint64_t seen_generation = state_.load(std::memory_order_acquire) >> 32;
  for (;;) {
    // Wait for a section of a newer generation: spin for the mode's time, then sleep.
    uint64_t s = state_.load(std::memory_order_acquire);
    const int64_t spin_ns = spin_ns_.load(std::memory_order_relaxed);
    if ((s >> 32) == seen_generation && spin_ns > 0) {
      const uint64_t epoch = park_epoch_.load(std::memory_order_relaxed);
      const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(spin_ns);
      for (unsigned i = 0;; ++i) {
        s = state_.load(std::memory_order_acquire);
        if ((s >> 32) != seen_generation || stop_.load(std::memory_order_relaxed)) break;
        if ((i & 63) == 63 &&
            (std::chrono::steady_clock::now() > until || park_epoch_.load(std::memory_order_relaxed) != epoch))
          break;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        asm volatile("yield");
#endif
      }
    }
    if ((s >> 32) == seen_generation) {
      std::unique_lock<std::mutex> lock(sleep_mutex_);
      sleepers_.fetch_add(1, std::memory_order_seq_cst);
      sleep_cv_.wait(lock, [&] {
        return (state_.load(std::memory_order_seq_cst) >> 32) != seen_generation ||
               stop_.load(std::memory_order_seq_cst);
      });
      sleepers_.fetch_sub(1, std::memory_order_relaxed);
      s = state_.load(std::memory_order_acquire);
    }
    if (stop_.load(std::memory_order_acquire)) return;
    seen_generation = s >> 32;
    if (index >= active_.load(std::memory_order_relaxed)) continue;  // a mode that uses fewer threads
    if (!join(s)) continue;                                          // closed already: the caller did the work
    drain(section_, index);
    state_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

void ThreadPool::parallel_for(size_t count, TaskFn fn) { parallel_for_from(0, count, count, fn); }

size_t ThreadPool::parallel_for_from(size_t begin, size_t must, size_t count, TaskFn fn) {
  if (begin >= count) return count;
  must = std::min(std::max(must, begin), count);
  WorkerSpanRecorder* recorder = t_recorder;
  const size_t active = active_.load(std::memory_order_relaxed);
  if (workers_.empty() || count - begin == 1 || active == 1) {
    const double start = recorder ? now_us() : 0.0;
    size_t t = begin;
    for (; t < count && (t < must || !yield_requested()); ++t) fn(t, 0);
    if (recorder && t > begin) recorder->spans.push_back(WorkerSpan{0, start, now_us(), recorder->tag});
    return t;
  }
  std::lock_guard<std::mutex> one_caller(section_mutex_);
  std::vector<WorkerSpan> spans(recorder ? threads_ : 0, WorkerSpan{0, 0.0, -1.0, nullptr});
  // No worker is inside the section (the last caller waited them out), so it can be rewritten.
  section_.fn = fn;
  section_.count = count;
  section_.must = must;
  section_.next.store(begin, std::memory_order_relaxed);
  section_.spans = recorder ? spans.data() : nullptr;
  const uint64_t generation = (state_.load(std::memory_order_relaxed) >> 32) + 1;
  state_.store(generation << 32, std::memory_order_seq_cst);  // open, nobody inside
  if (sleepers_.load(std::memory_order_seq_cst) > 0) {
    std::lock_guard<std::mutex> lock(sleep_mutex_);  // a worker between its check and its wait sees the new state
    sleep_cv_.notify_all();
  }
  drain(section_, 0);
  // Close the section: no worker joins from now on; wait for those inside to finish their tasks.
  uint64_t s = state_.fetch_or(kClosed, std::memory_order_acq_rel) | kClosed;
  for (unsigned i = 0; (s & kCountMask) != 0; ++i) {
    // A worker inside may share this CPU (more runnable threads than CPUs): let it run.
    if ((i & 1023) == 1023) std::this_thread::yield();
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
    s = state_.load(std::memory_order_acquire);
  }
  for (WorkerSpan& w : spans) {
    if (w.end_us < 0) continue;  // ran no task
    w.tag = recorder->tag;
    recorder->spans.push_back(w);
  }
  // Every task handed out has run (the workers inside finished theirs); claims past count ran nothing.
  return std::min(section_.next.load(std::memory_order_acquire), count);
}

}  // namespace nfuse
