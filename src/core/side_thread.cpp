#include "core/side_thread.h"

#include <sched.h>

namespace nfuse {

bool SideThread::start(std::function<void()> job) {
  if (running_) return false;
  const int here = sched_getcpu();
  cpu_set_t others;
  CPU_ZERO(&others);
  if (here < 0 || sched_getaffinity(0, sizeof(others), &others) != 0) return false;
  CPU_CLR(here, &others);
  if (CPU_COUNT(&others) == 0) return false;
  pthread_attr_t attr;
  if (pthread_attr_init(&attr) != 0) return false;
  bool started = false;
  if (pthread_attr_setaffinity_np(&attr, sizeof(others), &others) == 0) {
    job_ = std::move(job);
    started = pthread_create(&thread_, &attr, &SideThread::trampoline, this) == 0;
  }
  pthread_attr_destroy(&attr);
  running_ = started;
  return started;
}

void SideThread::join() {
  if (!running_) return;
  pthread_join(thread_, nullptr);
  running_ = false;
}

void* SideThread::trampoline(void* self) {
  static_cast<SideThread*>(self)->job_();
  return nullptr;
}

}  // namespace nfuse
