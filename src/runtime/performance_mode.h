// Performance modes: what a runtime (or one request) trades between latency and CPU time, and
// exactly what each sets, so a report can say it.
//
//   burst                       all threads, each pinned to a CPU of its own; workers spin after
//                               every parallel section (the pool's spin-wait before it sleeps);
//                               the dispatcher spins up to 2 ms for the next request.
//   sustained_high_performance  all threads, each pinned to a CPU of its own; workers spin within
//                               a request; the dispatcher spins 100 us when idle, then parks the
//                               workers and sleeps.
//   balanced                    half the threads (at least one), not pinned; workers sleep after
//                               every section; the dispatcher sleeps at once.
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
  size_t workers = 1;         // threads a parallel section uses
  bool workers_spin = false;  // between sections
  double idle_spin_us = 0.0;  // the dispatcher, between requests
  int nice = 0;               // the dispatcher thread's OS priority (setpriority), runtime mode only
  // Each of the dispatcher and the workers on a CPU of its own (sched_setaffinity, over the CPUs
  // the process may use): a worker woken for a parallel section then never queues behind the
  // dispatcher on one CPU while another idles, which stalls the section until the OS balances.
  bool pin_threads = false;
};

ModeSettings mode_settings(PerformanceMode mode, size_t threads);
// "burst: 2 threads, workers spin, dispatcher spins 2000 us idle, nice 0"
std::string describe(PerformanceMode mode, const ModeSettings& settings);

}  // namespace nfuse::runtime
