// The intra-op thread pool of the cpu and fusion backends and of the plan. Every task gets a
// worker index, so kernels use per-thread scratch sized at prepare time without locks.
//
// Our own pool rather than pthreadpool, for one property: a parallel section never waits for a
// worker that has not joined it. The caller drains the tasks itself, then closes the section and
// waits only for the workers that joined (each finishing the task in its hands); a worker that
// was asleep, descheduled or busy on its CPU with another thread (a render loop) simply misses
// the section. With pthreadpool the caller waited for every thread to check in, and one that the
// OS had queued behind another stalled every section for a scheduler period (~8 ms measured).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

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

struct WorkerSpan;

class ThreadPool {
 public:
  // `threads` workers including the caller; 1 (or less) runs everything on the caller.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  size_t threads() const { return threads_; }

  // Runs fn(task, worker) for every task in [0, count) and returns when all are done.
  // worker < threads() and no two tasks run on the same worker index at the same time.
  // Tasks are handed out dynamically (an atomic counter), so uneven tasks balance. One section
  // at a time: concurrent callers take turns.
  void parallel_for(size_t count, TaskFn fn);

  template <typename F>
  void run(size_t count, F&& f) {
    std::remove_reference_t<F>& ref = f;
    parallel_for(count, TaskFn(ref));
  }

  // Yielding, for the runtime's scheduler (runtime/executor.h): while a yield is requested, a
  // request is waiting for these workers, and a parallel_for_from stops early.
  void request_yield() { yield_.store(true, std::memory_order_relaxed); }
  void clear_yield() { yield_.store(false, std::memory_order_relaxed); }
  bool yield_requested() const { return yield_.load(std::memory_order_relaxed); }
  // As parallel_for over tasks [begin, count) (fn sees those indices), except that once the
  // tasks before `must` are handed out, later ones are handed out only while no yield is
  // requested. Returns the first task that did not run (count when all did); all before it ran.
  size_t parallel_for_from(size_t begin, size_t must, size_t count, TaskFn fn);

  // Performance modes (runtime/performance_mode.h): sections use at most `workers` of the
  // threads (1: the caller alone), and after a section a worker spins for the next one for
  // `spin_us` microseconds before it sleeps (0: it sleeps at once).
  void set_active_workers(size_t workers) { active_.store(workers < 1 ? 1 : workers, std::memory_order_relaxed); }
  size_t active_workers() const { return active_.load(std::memory_order_relaxed); }
  void set_spin_us(double us) { spin_ns_.store(static_cast<int64_t>(us * 1e3), std::memory_order_relaxed); }
  double spin_us() const { return static_cast<double>(spin_ns_.load(std::memory_order_relaxed)) * 1e-3; }
  // Sends spinning workers to sleep now.
  void park();
  // Pins worker w (w >= 1) to cpus[w % size] (sched affinity); empty: lets them run anywhere.
  // The caller's own thread (worker 0) is the caller's business.
  void pin_workers(const std::vector<int>& cpus);

  // How long a worker spins after a section unless told otherwise.
  static constexpr double kDefaultSpinUs = 500.0;

 private:
  // The task counter, the section's description and the pool state each on a cache line of its
  // own: workers polling the state must not pull the line every task claim writes.
  struct Section {
    TaskFn fn;
    size_t count = 0;
    size_t must = 0;              // tasks from here on only while no yield is requested (count: all)
    WorkerSpan* spans = nullptr;  // one per worker while profiling, else null
    alignas(64) std::atomic<size_t> next{0};
  };
  void worker_main(size_t index);
  bool join(uint64_t seen);  // joins the open section of generation `seen`
  void drain(Section& s, size_t worker);

  // state_: generation << 32 | closed bit (31) | workers inside the section (bits 0-30).
  static constexpr uint64_t kClosed = 1ull << 31;
  static constexpr uint64_t kCountMask = kClosed - 1;

  size_t threads_ = 1;
  std::vector<std::thread> workers_;
  std::mutex section_mutex_;  // one caller at a time
  alignas(64) Section section_{[] {
    static auto nothing = [](size_t, size_t) {};
    return TaskFn(nothing);
  }()};
  alignas(64) std::atomic<uint64_t> state_{kClosed};
  alignas(64) std::atomic<uint64_t> park_epoch_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<bool> stop_{false};
  std::atomic<bool> yield_{false};
  std::mutex sleep_mutex_;
  std::condition_variable sleep_cv_;
  std::atomic<size_t> active_{1};
  std::atomic<int64_t> spin_ns_{static_cast<int64_t>(kDefaultSpinUs * 1e3)};
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
