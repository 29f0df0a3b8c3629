// Per-run statistics (the "statistics channel" deployers ask for): after every run, what
// executed where and what it cost, read from the run itself, never from estimates.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "compile/plan.h"

namespace nfuse::runtime {

struct BackendRunStats {
  std::string backend;
  double ms = 0.0;             // wall time of its partitions in this run
  size_t nodes = 0;            // nodes its partitions ran
  size_t reference_nodes = 0;  // of those, on reference kernels instead of its own
};

struct RunStats {
  uint64_t run = 0;                       // this session's runs so far, this one included
  double wall_ms = 0.0;                   // from the call to outputs ready (input checks and copies included)
  double queue_wait_ms = 0.0;             // a runtime request's wait from ready to its first unit (0: run directly)
  double cpu_seconds = 0.0;               // the process's CPU time (user + system, every thread) during the run
  std::vector<BackendRunStats> backends;  // in order of first use
  size_t nodes = 0;
  size_t reference_nodes = 0;
  // Nodes that ran off the first-choice backend (the named one, or the partitioner's first
  // preference) or on a reference kernel, over all nodes.
  double fallback_ratio = 0.0;
  uint64_t arena_bytes = 0;          // bytes moved to and from the arena, as executed (compile/plan_traffic.h)
  uint64_t input_bytes_copied = 0;   // zero-copy I/O: bytes copied instead of read in place
  uint64_t output_bytes_copied = 0;  // ... instead of written in place

  std::string to_json() const;  // one line, no newline
};

// The static part of a plan's record (backends, nodes, reference nodes, fallback ratio, arena
// traffic): `first_choice` is the backend the session was asked for ("auto": the partitioner's
// first preference).
RunStats plan_run_stats(const compile::Plan& plan, const std::string& first_choice);

// Process CPU time (user + system, all threads) in seconds.
double process_cpu_seconds();

}  // namespace nfuse::runtime
