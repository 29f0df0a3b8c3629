// Judges a context binary's header against this device and build, as TensorRT-RTX's engine
// validity does: valid, suboptimal (it runs, but the plan assumed something this device lacks:
// every reason says what and what it costs) or invalid (a typed error naming what differs and
// what to do).
#pragma once

#include <string>
#include <vector>

#include "compile/context/context_info.h"
#include "nfuse/status.h"

namespace nfuse::context {

enum class Validity { kValid, kSuboptimal, kInvalid };
enum class CompatMode { kPermissive, kStrict };  // strict refuses a suboptimal binary

const char* validity_name(Validity v);  // "valid", "suboptimal", "invalid"

struct Verdict {
  Validity validity = Validity::kValid;
  Status error;                      // the typed error when invalid
  std::vector<std::string> reasons;  // every reason for suboptimal or invalid
};

// `known_backends`: the backends this build registers.
Verdict judge(const ContextInfo& info, const std::vector<std::string>& known_backends);

// The status a load under `mode` answers for `verdict`: ok for valid, and for suboptimal under
// permissive; the typed error otherwise (kIncompatibleDevice for a suboptimal one under strict).
Status load_status(const Verdict& verdict, CompatMode mode);

// kVersionMismatch for a format this runtime does not read, naming both sides and what to do.
Status format_status(uint32_t format_version, const std::string& writer_version);

}  // namespace nfuse::context
