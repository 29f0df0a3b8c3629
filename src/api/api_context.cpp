// C API: context binaries' header check (valid / suboptimal / invalid, with every reason).
#include <cstdlib>
#include <cstring>

#include "api/api_objects.h"
#include "backends/backend.h"
#include "compile/context/compatibility.h"
#include "compile/context/context_reader.h"
#include "compile/context/sha256.h"
#include "core/mapped_file.h"

namespace nfuse::api {
namespace {

char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

// The verdict on the binary at `path` (and, with a source model, whether it came from it).
context::Verdict check(const char* path, const char* source_model_path) {
  context::Verdict v;
  Result<context::ContextInfo> info = context::read_header_file(path);
  if (!info.ok()) {
    v.validity = context::Validity::kInvalid;
    v.error = info.status();
    v.reasons.push_back(info.status().message());
    return v;
  }
  v = context::judge(*info, backends::BackendRegistry::global().names());
  if (source_model_path && v.validity != context::Validity::kInvalid) {
    Result<std::shared_ptr<const MappedFile>> source = MappedFile::open(source_model_path);
    if (!source.ok()) {
      v.validity = context::Validity::kInvalid;
      v.error = source.status();
      v.reasons = {source.status().message()};
      return v;
    }
    std::string sha = context::sha256_hex((*source)->data(), (*source)->size());
    if (sha != info->source_sha256) {
      v.validity = context::Validity::kInvalid;
      v.error =
          model_mismatch("compiled from '" + info->source_name + "' (SHA-256 " + info->source_sha256 + "), not from '" +
                         source_model_path + "' (SHA-256 " + sha + "): recompile it with `nfuse compile`");
      v.reasons = {v.error.message()};
    }
  }
  return v;
}

}  // namespace
}  // namespace nfuse::api

using namespace nfuse;

extern "C" {

nfuse_status* nfuse_context_check_file(const char* path, const char* source_model_path,
                                       nfuse_context_validity* validity, char** reasons) {
  constexpr const char* fn = "nfuse_context_check_file";
  return api::guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_out(fn, "validity", validity));
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_out(fn, "path", path));
    if (reasons) *reasons = nullptr;
    context::Verdict v = api::check(path, source_model_path);
    *validity = v.validity == context::Validity::kValid        ? NFUSE_CONTEXT_VALID
                : v.validity == context::Validity::kSuboptimal ? NFUSE_CONTEXT_SUBOPTIMAL
                                                               : NFUSE_CONTEXT_INVALID;
    if (reasons && !v.reasons.empty()) {
      std::string joined;
      for (const std::string& r : v.reasons) joined += (joined.empty() ? "" : "\n") + r;
      *reasons = api::copy_string(joined);
    }
    if (v.validity == context::Validity::kInvalid) return v.error.with_context(std::string("'") + path + "'");
    return ok_status();
  });
}

void nfuse_string_release(char* s) { std::free(s); }

}  // extern "C"
