// The intra-op thread pool of the cpu and fusion backends and of the plan: a thin wrapper over pthreadpool (Debian
// libpthreadpool-dev, the pool XNNPACK uses) that hands every task a worker index, so kernels
// can use per-thread scratch sized at prepare time without locks.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

struct pthreadpool;

namespace nfuse {

// A non-owning reference to a callable `void(size_t task, size_t worker)`: no allocation.
class TaskFn {
 public:
  template <typename F>
  TaskFn(F& f)  // NOLINT(google-explicit-constructor)
      : obj_(static_cast<void*>(&f)), call_([](void* o, size_t t, size_t w) { (*static_cast<F*>(o))(t, w); }) {}
  void operator()(size_t task, size_t worker) const { call_(obj_, task, worker); }

 private:
  void* obj_;
  void (*call_)(void*, size_t, size_t);
};

class ThreadPool {
 public:
  // `threads` workers including the caller; 1 (or less) runs everything on the caller.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t threads() const { return threads_; }

  // Performance modes (runtime/performance_mode.h): parallel sections use at most `workers` of
  // the threads (1: the caller alone), and after each section the workers either spin a while
  // for the next one (pthreadpool's spin-wait, then a futex) or block at once.
  void set_active_workers(size_t workers) { active_.store(workers < 1 ? 1 : workers, std::memory_order_relaxed); }
  size_t active_workers() const { return active_.load(std::memory_order_relaxed); }
  void set_workers_spin(bool spin) { workers_spin_.store(spin, std::memory_order_relaxed); }
  bool workers_spin() const { return workers_spin_.load(std::memory_order_relaxed); }
  // Sends spinning workers to sleep now (an empty section after which they block).
  void park();
  // Runs fn(worker) once on each of the pool's threads at the same time (the caller is worker
  // 0): what a thread-level setting such as its OS priority needs.
  void on_each_thread(const std::function<void(size_t worker)>& fn);

  // Runs fn(task, worker) for every task in [0, count) and returns when all are done.
  // worker < threads() and no two tasks run on the same worker index at the same time.
  // Tasks are handed out dynamically (an atomic counter), so uneven tasks balance.
  void parallel_for(size_t count, TaskFn fn);

  template <typename F>
  void run(size_t count, F&& f) {
    std::remove_reference_t<F>& ref = f;
    parallel_for(count, TaskFn(ref));
  }

 private:
  size_t threads_ = 1;
  pthreadpool* pool_ = nullptr;
  std::atomic<size_t> active_{1};
  std::atomic<bool> workers_spin_{true};
};

// Microseconds on the steady clock: the one timeline of profiles, traces and worker spans.
inline double steady_us(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::micro>(t.time_since_epoch()).count();
}

// Profiling: while a recorder is set on a thread, every parallel_for that thread calls records,
// for each worker that ran tasks, the span from its first task's start to its last task's end
// (steady clock, microseconds), tagged with the recorder's current tag (the node being timed).
struct WorkerSpan {
  size_t worker = 0;
  double start_us = 0.0, end_us = 0.0;
  const void* tag = nullptr;
};
struct WorkerSpanRecorder {
  std::vector<WorkerSpan> spans;
  const void* tag = nullptr;
};
// Sets the calling thread's recorder (null: none) and returns the one it replaces.
WorkerSpanRecorder* set_worker_span_recorder(WorkerSpanRecorder* recorder);
WorkerSpanRecorder* worker_span_recorder();

// `shared` when set (the plan's pool, CompileContext::pool), else a pool of its own of `threads`.
inline std::shared_ptr<ThreadPool> pool_for(const std::shared_ptr<ThreadPool>& shared, int threads) {
  return shared ? shared : std::make_shared<ThreadPool>(threads);
}

}  // namespace nfuse
