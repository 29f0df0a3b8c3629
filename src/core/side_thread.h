// A thread for one job beside the caller: started on another CPU than the one the caller runs
// on, so that the job overlaps the caller's own work instead of preempting it. (A new thread
// starts on its parent's CPU and may run first there; the scheduler spreads the two only after a
// fraction of a millisecond of sharing it.)
#pragma once

#include <pthread.h>
#include <sched.h>

#include <functional>

namespace nfuse {

class SideThread {
 public:
  SideThread() = default;
  SideThread(const SideThread&) = delete;
  SideThread& operator=(const SideThread&) = delete;
  ~SideThread() { join(); }

  // Starts `job` on another CPU this process may use; false (and `job` not run) when there is no
  // other CPU or no thread to spare. `job` must not throw.
  bool start(std::function<void()> job);
  // Waits for the job; returns at once when none was started or it was already joined.
  void join();

 private:
  static void* trampoline(void* self);
  std::function<void()> job_;
  cpu_set_t others_{};       // the CPUs it may run on: the caller's less the one it started from
  bool pin_itself_ = false;  // no thread attribute for that here: the thread sets it first
  pthread_t thread_{};
  bool running_ = false;
};

}  // namespace nfuse
