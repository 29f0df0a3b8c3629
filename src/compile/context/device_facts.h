// The facts about this device and build that a context binary records when it is compiled and
// is judged against when it is loaded: architecture, kernel ISA, CPU features, caches.
#pragma once

#include <string>
#include <vector>

#include "compile/context/context_info.h"

namespace nfuse::context {

struct DeviceFacts {
  std::string arch;                   // "x86_64", "aarch64"
  std::string isa;                    // the kernels' selected ISA ("avx512", "avx2", "neon", "scalar")
  std::vector<std::string> features;  // "avx2", "fma", "avx512f", "avx512vnni", "neon", ...
  uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  std::string nfuse_version;
  std::string build_id;
};

const DeviceFacts& this_device();
// Records this device and build in `info` (arch, planned ISA and features, caches, versions).
void record_device(ContextInfo* info);

}  // namespace nfuse::context
