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
  job_ = std::move(job);
  others_ = others;
#if defined(__GLIBC__)
  // Created on those CPUs: it never runs on the caller's.
  pin_itself_ = pthread_attr_setaffinity_np(&attr, sizeof(others), &others) != 0;
#else
  pin_itself_ = true;  // Bionic and musl have no attribute for it: the thread moves itself first
#endif
  const bool started = pthread_create(&thread_, &attr, &SideThread::trampoline, this) == 0;
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
  auto* side = static_cast<SideThread*>(self);
  if (side->pin_itself_) (void)sched_setaffinity(0, sizeof(side->others_), &side->others_);
  side->job_();
  return nullptr;
}

}  // namespace nfuse
