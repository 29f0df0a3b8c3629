#include "runtime/performance_mode.h"

#include <algorithm>

namespace nfuse::runtime {

const char* performance_mode_name(PerformanceMode mode) {
  switch (mode) {
    case PerformanceMode::kBurst: return "burst";
    case PerformanceMode::kSustainedHighPerformance: return "sustained_high_performance";
    case PerformanceMode::kBalanced: return "balanced";
    case PerformanceMode::kPowerSaver: return "power_saver";
  }
  return "unknown";
}

std::optional<PerformanceMode> parse_performance_mode(const std::string& name) {
  for (PerformanceMode m : {PerformanceMode::kBurst, PerformanceMode::kSustainedHighPerformance,
                            PerformanceMode::kBalanced, PerformanceMode::kPowerSaver})
    if (name == performance_mode_name(m)) return m;
  return std::nullopt;
}

ModeSettings mode_settings(PerformanceMode mode, size_t threads) {
  threads = std::max<size_t>(1, threads);
  switch (mode) {
    case PerformanceMode::kBurst: return {threads, 2000.0, 2000.0, 0, true};
    case PerformanceMode::kSustainedHighPerformance: return {threads, 200.0, 100.0, 0, true};
    case PerformanceMode::kBalanced: return {std::max<size_t>(1, threads / 2), 0.0, 0.0, 0, false};
    case PerformanceMode::kPowerSaver: return {1, 0.0, 0.0, 19, false};
  }
  return {threads, 200.0, 100.0, 0, true};
}

std::string describe(PerformanceMode mode, const ModeSettings& s) {
  return std::string(performance_mode_name(mode)) + ": " + std::to_string(s.workers) + " thread" +
         (s.workers == 1 ? "" : "s") + ", workers " +
         (s.worker_spin_us > 0 ? "spin " + std::to_string(static_cast<int>(s.worker_spin_us)) + " us"
                               : std::string("sleep")) +
         " after a section, dispatcher spins " + std::to_string(static_cast<int>(s.idle_spin_us)) + " us idle, nice " +
         std::to_string(s.nice) + (s.pin_threads ? ", threads pinned to CPUs" : "");
}

}  // namespace nfuse::runtime
