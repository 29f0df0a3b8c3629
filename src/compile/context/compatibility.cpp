#include "compile/context/compatibility.h"

#include <algorithm>
#include <cstdio>

#include "compile/context/context_format.h"
#include "compile/context/context_reader.h"
#include "compile/context/device_facts.h"
#include "kernels/cpu_features.h"

namespace nfuse::context {
namespace {

bool contains(const std::vector<std::string>& list, const std::string& s) {
  return std::find(list.begin(), list.end(), s) != list.end();
}

std::string joined(const std::vector<std::string>& list) {
  std::string out;
  for (const std::string& s : list) out += (out.empty() ? "" : ", ") + s;
  return out;
}

}  // namespace

const char* validity_name(Validity v) {
  switch (v) {
    case Validity::kValid: return "valid";
    case Validity::kSuboptimal: return "suboptimal";
    case Validity::kInvalid: return "invalid";
  }
  return "invalid";
}

Status format_status(uint32_t format_version, const std::string& writer_version) {
  if (format_version >= kOldestReadableFormat && format_version <= kFormatVersion) return ok_status();
  std::string readable = std::to_string(kOldestReadableFormat) + "-" + std::to_string(kFormatVersion);
  std::string who = writer_version.empty() ? "an unknown nfuse version" : "nfuse " + writer_version;
  std::string what = "built by " + who + " with format " + std::to_string(format_version) + "; this runtime (nfuse " +
                     NFUSE_VERSION + ") reads formats " + readable + ": ";
  if (format_version > kFormatVersion)
    return version_mismatch(what + "upgrade nfuse or recompile with `nfuse compile`");
  return version_mismatch(what + "recompile the model with this nfuse (`nfuse compile`)");
}

bool strip_heights_apply(const ContextInfo& info) {
  const size_t here = this_device().l2_bytes;
  return info.l2_bytes == 0 || here == 0 || info.l2_bytes == here;
}

Verdict judge(const ContextInfo& info, const std::vector<std::string>& known_backends) {
  Verdict v;
  Status format = format_status(info.format_version, info.nfuse_version);
  if (!format.ok()) {
    v.validity = Validity::kInvalid;
    v.error = format;
    v.reasons.push_back(format.message());
    return v;
  }
  const DeviceFacts& device = this_device();
  std::vector<std::string> missing_required;
  for (const std::string& f : info.required_isa)
    if (!contains(device.features, f)) missing_required.push_back(f);
  std::vector<std::string> missing_backends;
  for (const std::string& b : info.backends)
    if (b != "auto" && !contains(known_backends, b)) missing_backends.push_back(b);
  if (!missing_required.empty()) {
    v.reasons.push_back("needs ISA features this CPU lacks: " + joined(missing_required) +
                        "; recompile on this device with `nfuse compile`");
  }
  if (!missing_backends.empty()) {
    v.reasons.push_back("names backends this build lacks: " + joined(missing_backends) +
                        "; use an nfuse build with them or recompile with other --backend/--prefer/--pin options");
  }
  if (!v.reasons.empty()) {
    v.validity = Validity::kInvalid;
    v.error = incompatible_device(joined(v.reasons));
    return v;
  }
  if (info.arch != device.arch) {
    v.reasons.push_back("compiled on " + info.arch + ", running on " + device.arch +
                        ": the placement and tile plans assumed the other machine; recompile here for the best plan");
  }
  std::vector<std::string> missing_planned;
  for (const std::string& f : info.planned_features)
    if (!contains(device.features, f)) missing_planned.push_back(f);
  if (!missing_planned.empty()) {
    std::string isa = kernels::isa_name(kernels::selected_isa());
    v.reasons.push_back("planned for " + info.planned_isa + " with " + joined(missing_planned) +
                        ", which this CPU lacks: its kernels run " + isa +
                        " and the placement costs assumed the faster unit; recompile on this device for the best plan");
  }
  const std::string isa = kernels::isa_name(kernels::selected_isa());
  if (!info.packs.empty() && info.planned_isa != isa) {
    uint64_t floats = 0;
    for (const ContextInfo::Packed& p : info.packs) floats += p.floats;
    char cost[160];
    std::snprintf(cost, sizeof cost, "%zu buffers, %.1f MiB, about %.0f ms when compiled", info.packs.size(),
                  static_cast<double>(floats) * sizeof(float) / (1024.0 * 1024.0), info.pack_ms);
    v.reasons.push_back("weights packed for " + info.planned_isa + " kernels; this CPU runs " + isa +
                        ": they are repacked at load from the kept canonical weights (" + cost + ")");
  }
  if ((info.options.backend == "fusion" || info.options.backend == "auto") && !strip_heights_apply(info)) {
    v.reasons.push_back("fused groups' strip heights chosen for a " + std::to_string(info.l2_bytes / 1024) +
                        " KiB L2; this CPU's is " + std::to_string(this_device().l2_bytes / 1024) +
                        " KiB: chosen again at load (a fraction of a millisecond); recompile here to store them");
  }
  if (!v.reasons.empty()) v.validity = Validity::kSuboptimal;
  return v;
}

Verdict invalid_verdict(const Status& error) {
  Verdict v;
  v.validity = Validity::kInvalid;
  v.error = error;
  v.reasons = {error.message()};
  return v;
}

Verdict check_header_file(const std::string& path, const std::vector<std::string>& known_backends, ContextInfo* info) {
  Result<ContextInfo> header = read_header_file(path);
  if (!header.ok()) return invalid_verdict(header.status());
  *info = std::move(*header);
  return judge(*info, known_backends);
}

Status source_status(const ContextInfo& info, const std::string& sha256, const std::string& source) {
  if (sha256 == info.source_sha256) return ok_status();
  return model_mismatch("compiled from '" + info.source_name + "' (SHA-256 " + info.source_sha256 + "), not from " +
                        source + " (SHA-256 " + sha256 + "): recompile it with `nfuse compile`");
}

Status load_status(const Verdict& verdict, CompatMode mode) {
  if (verdict.validity == Validity::kInvalid) return verdict.error;
  if (verdict.validity == Validity::kSuboptimal && mode == CompatMode::kStrict)
    return incompatible_device("suboptimal on this device and --compat strict refuses it: " + joined(verdict.reasons));
  return ok_status();
}

}  // namespace nfuse::context
