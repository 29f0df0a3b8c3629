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

// Whether the fused groups' strip heights a binary stores were chosen for this CPU's L2 (the
// header's cache sizes; unknown on either side counts as the same). Where not, sessions choose
// them again and the verdict says so.
bool strip_heights_apply(const ContextInfo& info);

// The status a load under `mode` answers for `verdict`: ok for valid, and for suboptimal under
// permissive; the typed error otherwise (kIncompatibleDevice for a suboptimal one under strict).
Status load_status(const Verdict& verdict, CompatMode mode);

// The verdict for a binary that could not be read or judged at all.
Verdict invalid_verdict(const Status& error);

// The verdict on the binary at `path` from its prefix and header alone (*info gets the header
// when it could be read).
Verdict check_header_file(const std::string& path, const std::vector<std::string>& known_backends, ContextInfo* info);

// kModelMismatch when the binary was not compiled from the model whose SHA-256 is `sha256`
// (`source` names it in the message); ok otherwise.
Status source_status(const ContextInfo& info, const std::string& sha256, const std::string& source);

// kVersionMismatch for a format this runtime does not read, naming both sides and what to do.
Status format_status(uint32_t format_version, const std::string& writer_version);

}  // namespace nfuse::context
