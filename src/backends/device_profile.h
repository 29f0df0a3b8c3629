// Device profiles: what each backend's hardware can do, as the partitioner's cost model needs it
// (a roofline: peak compute per dtype, bandwidth per memory level, cache sizes, fixed costs per
// step and per partition boundary). `nfuse device-profile` measures one with short
// microbenchmarks and writes it as JSON; without a file the built-in defaults (measured once on
// the machine nfuse is developed on) are used.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "nfuse/status.h"

namespace nfuse::backends {

// One backend's numbers. Compute and L2 figures are per core (one intra-op thread); DRAM
// bandwidth is what the whole socket sustains (threads share it).
struct BackendProfile {
  std::string backend;              // "cpu", "ref", "fusion", ...
  double gflops_f32 = 0.0;          // peak FP32 GFLOP/s of this backend's kernels, one core
  double gflops_f32_depthwise = 0.0;  // FP32 depthwise conv: too little reuse to reach GEMM peak
  double gflops_int8 = 0.0;         // peak INT8 GOP/s, one core
  double dram_gbps = 0.0;           // sustained streaming bandwidth from DRAM, GB/s
  double l2_gbps = 0.0;             // streaming bandwidth from a core's L2, GB/s
  int64_t l2_bytes = 0;             // L2 per core
  int64_t l3_bytes = 0;             // L3 share of one core (informational: not in the roofline)
  double step_us = 0.0;             // fixed cost of dispatching one node
  double boundary_us = 0.0;         // fixed cost of one partition boundary into this backend
  // Host memory is shared with the CPU: a boundary costs only boundary_us, no copy. A device
  // backend with its own memory sets false and is charged bytes / dram_gbps on top.
  bool host_shared = true;
};

// The host CPU's numbers and, per backend, the numbers the cost model uses. Each backend derives
// its own from the host's (Backend::cost_profile: ref's scalar loops are slower, cpu and fusion
// run on the host's cores), so no rule about a backend is written outside its folder.
struct DeviceProfile {
  std::string source;  // the file it came from, or "built-in defaults" / "measured"
  // The host CPU: the entry of the registered general-fallback backend (cpu) when the list has
  // one, else the built-in defaults.
  std::vector<BackendProfile> backends;

  // The named backend's numbers: its entry when listed; else, for a registered backend, its
  // cost_profile of the host's numbers; else the host's (renamed), so that a backend is costed
  // like the CPU until it is profiled.
  BackendProfile for_backend(const std::string& name) const;
  BackendProfile host() const;
};

// The defaults: this development machine (one AMD EPYC core: ~100 GFLOP/s FP32, ~15 GB/s DRAM,
// ~66 GB/s L2, 512 KiB L2) as the host, and an entry per registered backend derived from it.
DeviceProfile default_device_profile();

// Reads a profile written by save_device_profile. kInvalidArgument naming the file and the
// field when it is not valid JSON or a field is missing, mistyped or out of range.
Result<DeviceProfile> load_device_profile(const std::string& path);
// The profile as JSON text ({"version":1,"backends":[{...},...]}).
std::string device_profile_json(const DeviceProfile& profile);
// Writes device_profile_json to `path`; kUnavailable when the file cannot be written.
Status save_device_profile(const DeviceProfile& profile, const std::string& path);

// What measure_device_profile found, for the CLI to print.
struct ProfileMeasurement {
  std::string what;  // "f32 GEMM 256x256x256"
  double value = 0.0;
  std::string unit;  // "GFLOP/s"
};

// Measures the host's numbers with nfuse's own kernels (f32 GEMM and depthwise for compute, a
// 64 MiB stream for DRAM, a 256 KiB stream for L2, cache sizes from kernels::cpu_features()), in well under
// 10 s; every registered backend's entry is derived from them (Backend::cost_profile).
// `step_us(backend)` measures one node's dispatch cost by running a tiny graph (the runtime
// does that; returns < 0 when the backend is not available); it may be empty, then the
// defaults' overheads stay.
DeviceProfile measure_device_profile(const std::function<double(const std::string&)>& step_us,
                                     std::vector<ProfileMeasurement>* log);

}  // namespace nfuse::backends
