// C API: context binaries' header check (valid / suboptimal / invalid, with every reason).
#include <cstdlib>
#include <cstring>

#include "api/api_objects.h"
#include "backends/backend.h"
#include "compile/context/compatibility.h"
#include "compile/context/sha256.h"

namespace nfuse::api {
namespace {

char* copy_string(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}

// The verdict on the binary at `path` (and, with a source model, whether it came from it).
context::Verdict check(const char* path, const char* source_model_path) {
  context::ContextInfo info;
  context::Verdict v = context::check_header_file(path, backends::BackendRegistry::global().names(), &info);
  if (!source_model_path || v.validity == context::Validity::kInvalid) return v;
  Result<std::string> sha = context::sha256_file(source_model_path);
  Status source =
      sha.ok() ? context::source_status(info, *sha, std::string("'") + source_model_path + "'") : sha.status();
  return source.ok() ? v : context::invalid_verdict(source);
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
