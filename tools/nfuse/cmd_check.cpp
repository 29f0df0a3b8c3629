// `nfuse check`: a context binary judged against this device and build from its header alone
// (valid / suboptimal / invalid, every reason), in well under a millisecond; --full also maps the
// file and checks every section and the graph.
#include <algorithm>
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

}  // namespace

int cmd_check(const CheckArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  context::ContextInfo header;
  context::Verdict verdict =
      context::check_header_file(args.binary, backends::BackendRegistry::global().names(), &header);
  const double header_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  const bool readable = !header.sections.empty();
  if (verdict.validity != context::Validity::kInvalid && !args.source_model.empty()) {
    auto sha = context::sha256_file(args.source_model);
    if (!sha.ok()) return report(sha.status());
    Status source = context::source_status(header, *sha, "'" + args.source_model + "'");
    if (!source.ok()) verdict = context::invalid_verdict(source);
  }
  if (verdict.validity != context::Validity::kInvalid && args.full) {
    auto file = MappedFile::open(args.binary);
    Status s = file.ok() ? context::verify_sections(header, (*file)->data()) : file.status();
    if (s.ok()) s = context::read_graph(header, (*file)->data(), *file).status();
    if (!s.ok()) verdict = context::invalid_verdict(s);
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
    if (readable) {
      j["format_version"] = header.format_version;
      j["nfuse_version"] = header.nfuse_version;
      j["build_id"] = header.build_id;
      j["arch"] = header.arch;
      j["planned_isa"] = header.planned_isa;
      j["planned_features"] = header.planned_features;
      j["required_isa"] = header.required_isa;
      j["source"] = {{"name", header.source_name}, {"sha256", header.source_sha256}};
      j["backend"] = header.options.backend;
      std::vector<std::string> sigs;
      for (const auto& sig : header.signatures) sigs.push_back(signature_text(sig));
      j["signatures"] = sigs;
      j["sections"] = header.sections.size();
      j["file_bytes"] = header.file_size;
      // Where each section's checksum is checked when a session loads the binary
      // (context::check_schedule: at load, beside the load, or when read).
      const context::CheckSchedule schedule = context::check_schedule(header);
      auto listed = [](const std::vector<uint32_t>& list, size_t i) {
        return std::binary_search(list.begin(), list.end(), static_cast<uint32_t>(i));
      };
      nlohmann::json table = nlohmann::json::array();
      for (size_t i = 0; i < header.sections.size(); ++i) {
        const context::Section& s = header.sections[i];
        const char* when = listed(schedule.when_read, i)     ? "when read"
                           : listed(schedule.beside_load, i) ? "beside load"
                                                             : "at load";
        table.push_back(
            {{"kind", context::section_kind_name(s.kind)}, {"offset", s.offset}, {"bytes", s.size}, {"checked", when}});
      }
      j["section_table"] = table;
    }
    std::printf("%s\n", j.dump(2).c_str());
    return fails ? 1 : 0;
  }
  std::printf("%s: %s\n", args.binary.c_str(), context::validity_name(verdict.validity));
  if (readable) {
    std::printf("  format %u, nfuse %s (%s)\n", header.format_version, header.nfuse_version.c_str(),
                header.build_id.c_str());
    std::string features;
    for (const std::string& f : header.planned_features) features += (features.empty() ? "" : ",") + f;
    std::printf("  compiled on %s for %s [%s]\n", header.arch.c_str(), header.planned_isa.c_str(), features.c_str());
    std::printf("  source %s sha256 %s\n", header.source_name.c_str(), header.source_sha256.c_str());
    std::printf("  plan: backend %s, threads hint %d", header.options.backend.c_str(), header.options.threads);
    for (size_t i = 0; i < header.signatures.size(); ++i)
      std::printf("%s%s", i == 0 ? ", shapes " : "; ", signature_text(header.signatures[i]).c_str());
    std::printf("\n  %zu sections, %llu bytes\n", header.sections.size(),
                static_cast<unsigned long long>(header.file_size));
    uint64_t later_bytes = 0;
    const std::vector<uint32_t> later = context::check_schedule(header).when_read;
    for (uint32_t i : later) later_bytes += header.sections[i].size;
    if (!later.empty())
      std::printf("  %zu canonical weights (%llu bytes) that packed twins replace: checked when read, not at load\n",
                  later.size(), static_cast<unsigned long long>(later_bytes));
  }
  for (const std::string& r : verdict.reasons) std::printf("  reason: %s\n", r.c_str());
  if (!verdict.error.ok()) std::printf("  error: %s\n", verdict.error.to_string().c_str());
  std::printf("  header checked in %.3f ms\n", header_ms);
  return fails ? 1 : 0;
}

}  // namespace nfuse::cli
