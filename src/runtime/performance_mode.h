// Performance modes: what a runtime (or one request) trades between latency and CPU time, and
// exactly what each sets, so a report can say it.
//
//   burst                       all threads; after a parallel section the workers spin 2 ms
//                               for the next one; the dispatcher spins up to 2 ms for the next
//                               request before it sleeps.
//   sustained_high_performance  all threads; workers spin 200 us after a section; the dispatcher
//                               spins 100 us when idle, then parks the workers and sleeps.
//   balanced                    half the threads (at least one); workers sleep right after every
//                               section; the dispatcher sleeps at once.
//   power_saver                 one thread (the dispatcher alone); it sleeps at once, and the
//                               dispatcher thread runs at the lowest OS priority (nice 19) once
//                               the runtime is in this mode (an unprivileged thread cannot raise
//                               its priority again: the runtime keeps it there, and says so).
//
// A request's own mode applies to its units (threads and spinning); the OS priority belongs to
// the runtime's mode only.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace nfuse::runtime {

enum class PerformanceMode { kBurst, kSustainedHighPerformance, kBalanced, kPowerSaver };

const char* performance_mode_name(PerformanceMode mode);
std::optional<PerformanceMode> parse_performance_mode(const std::string& name);

struct ModeSettings {
  size_t workers = 1;           // threads a parallel section uses
  double worker_spin_us = 0.0;  // after a section, before a worker sleeps
  double idle_spin_us = 0.0;    // the dispatcher, between requests
  int nice = 0;                 // the dispatcher thread's OS priority (setpriority), runtime mode only
  // The dispatcher and each worker on a CPU of its own (sched affinity, over the CPUs the process
  // may use; runtime mode only): a worker woken for a request then never lands on the
  // dispatcher's CPU, where it would share one CPU with it until the OS moved it.
  bool pin_threads = false;
};

ModeSettings mode_settings(PerformanceMode mode, size_t threads);
// "burst: 2 threads, workers spin, dispatcher spins 2000 us idle, nice 0"
std::string describe(PerformanceMode mode, const ModeSettings& settings);

}  // namespace nfuse::runtime
