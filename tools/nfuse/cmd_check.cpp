// `nfuse check`: a context binary judged against this device and build from its header alone
// (valid / suboptimal / invalid, every reason), in well under a millisecond; --full also maps the
// file and checks every section and the graph.
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "cli_common.h"
#include "commands.h"
#include "compile/context/compatibility.h"
#include "compile/context/context_reader.h"
#include "compile/context/sha256.h"
#include "core/mapped_file.h"

namespace nfuse::cli {
namespace {

std::string signature_text(const context::ShapeSignature& sig) {
  std::string out;
  for (const auto& [name, dims] : sig) out += (out.empty() ? "" : " ") + name + "=" + ir::dims_to_string(dims);
  return out;
}

context::Verdict invalid_verdict(const Status& error) {
  context::Verdict v;
  v.validity = context::Validity::kInvalid;
  v.error = error;
  v.reasons = {error.message()};
  return v;
}

}  // namespace

int cmd_check(const CheckArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  Result<context::ContextInfo> info = context::read_header_file(args.binary);
  context::Verdict verdict =
      info.ok() ? context::judge(*info, backends::BackendRegistry::global().names()) : invalid_verdict(info.status());
  const double header_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (info.ok() && verdict.validity != context::Validity::kInvalid && !args.source_model.empty()) {
    auto source = MappedFile::open(args.source_model);
    if (!source.ok()) return report(source.status());
    std::string sha = context::sha256_hex((*source)->data(), (*source)->size());
    if (sha != info->source_sha256)
      verdict = invalid_verdict(model_mismatch("compiled from '" + info->source_name + "' (SHA-256 " +
                                               info->source_sha256 + "), not from '" + args.source_model +
                                               "' (SHA-256 " + sha + "): recompile it with `nfuse compile`"));
  }
  if (info.ok() && verdict.validity != context::Validity::kInvalid && args.full) {
    auto file = MappedFile::open(args.binary);
    Status s = file.ok() ? context::verify_sections(*info, (*file)->data()) : file.status();
    if (s.ok()) s = context::read_graph(*info, (*file)->data(), *file).status();
    if (!s.ok()) verdict = invalid_verdict(s);
  }
  const bool strict = args.compat == "strict";
  if (strict && verdict.validity == context::Validity::kSuboptimal)
    verdict.error = context::load_status(verdict, context::CompatMode::kStrict);
  const bool fails =
      verdict.validity == context::Validity::kInvalid || (strict && verdict.validity == context::Validity::kSuboptimal);
  if (args.json) {
    nlohmann::json j;
    j["binary"] = args.binary;
    j["validity"] = context::validity_name(verdict.validity);
    j["reasons"] = verdict.reasons;
    if (!verdict.error.ok())
      j["error"] = {{"code", status_code_name(verdict.error.code())}, {"message", verdict.error.message()}};
    j["header_ms"] = header_ms;
    if (info.ok()) {
      j["format_version"] = info->format_version;
      j["nfuse_version"] = info->nfuse_version;
      j["build_id"] = info->build_id;
      j["arch"] = info->arch;
      j["planned_isa"] = info->planned_isa;
      j["planned_features"] = info->planned_features;
      j["required_isa"] = info->required_isa;
      j["source"] = {{"name", info->source_name}, {"sha256", info->source_sha256}};
      j["backend"] = info->options.backend;
      std::vector<std::string> sigs;
      for (const auto& sig : info->signatures) sigs.push_back(signature_text(sig));
      j["signatures"] = sigs;
      j["sections"] = info->sections.size();
      j["file_bytes"] = info->file_size;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return fails ? 1 : 0;
  }
  std::printf("%s: %s\n", args.binary.c_str(), context::validity_name(verdict.validity));
  if (info.ok()) {
    std::printf("  format %u, nfuse %s (%s)\n", info->format_version, info->nfuse_version.c_str(),
                info->build_id.c_str());
    std::string features;
    for (const std::string& f : info->planned_features) features += (features.empty() ? "" : ",") + f;
    std::printf("  compiled on %s for %s [%s]\n", info->arch.c_str(), info->planned_isa.c_str(), features.c_str());
    std::printf("  source %s sha256 %s\n", info->source_name.c_str(), info->source_sha256.c_str());
    std::printf("  plan: backend %s, threads hint %d", info->options.backend.c_str(), info->options.threads);
    for (const auto& sig : info->signatures) std::printf(", shapes %s", signature_text(sig).c_str());
    std::printf("\n  %zu sections, %llu bytes\n", info->sections.size(),
                static_cast<unsigned long long>(info->file_size));
  }
  for (const std::string& r : verdict.reasons) std::printf("  reason: %s\n", r.c_str());
  if (!verdict.error.ok()) std::printf("  error: %s\n", verdict.error.to_string().c_str());
  std::printf("  header checked in %.3f ms\n", header_ms);
  return fails ? 1 : 0;
}

}  // namespace nfuse::cli
