// `nfuse compile`: import, optimize and plan a model as the flags say, then save the optimized
// graph, the plan options and the shape signatures as a context binary.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

#include "cli_common.h"
#include "commands.h"
#include "compile/context/sha256.h"
#include "core/mapped_file.h"
#include "runtime/context_model.h"

namespace nfuse::cli {

namespace {

// The --shape flags as signatures: a name given again starts the next one
// (`--shape x=1x3x960x960 --shape x=1x3x480x480` is two).
Result<std::vector<std::map<std::string, std::vector<int64_t>>>> signatures(const std::vector<std::string>& flags) {
  std::vector<std::vector<std::string>> groups(1);
  std::set<std::string> named;
  for (const std::string& f : flags) {
    const std::string name = f.substr(0, f.rfind('='));
    if (named.count(name)) {
      groups.emplace_back();
      named.clear();
    }
    groups.back().push_back(f);
    named.insert(name);
  }
  std::vector<std::map<std::string, std::vector<int64_t>>> out;
  for (const std::vector<std::string>& g : groups) {
    NFUSE_ASSIGN_OR_RETURN(auto shapes, parse_shapes(g));
    out.push_back(std::move(shapes));
  }
  return out;
}

}  // namespace

int cmd_compile(const CompileArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  auto sigs = signatures(args.common.shapes);
  if (!sigs.ok()) return report(sigs.status());
  if (runtime::is_context_file(args.common.model))
    return report(invalid_argument("'" + args.common.model + "' is already a context binary: compile its ONNX model"));
  auto sha = context::sha256_file(args.common.model);
  if (!sha.ok()) return report(sha.status());
  auto session = open_session(args.common);
  if (!session.ok()) return report(session.status());
  // Plans for each signature the flags give (symbolic dims as 1 otherwise), so placement errors
  // surface here and the binary records the shapes its sessions prepare at load.
  for (const auto& shapes : *sigs) {
    auto plan = (*session)->prepare((*session)->default_input_dims(shapes));
    if (!plan.ok()) return report(with_assumed(plan.status(), assumed_inputs((*session)->graph(), shapes)));
  }
  const std::string name = std::filesystem::path(args.common.model).filename().string();
  Status saved = runtime::save_context(**session, name, *sha, args.output);
  if (!saved.ok()) return report(saved);
  auto size = file_size(args.output);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("compiled %s -> %s (%.2f MiB, backend %s, %zu signature%s) in %.0f ms\n", args.common.model.c_str(),
              args.output.c_str(), size.ok() ? static_cast<double>(*size) / (1024.0 * 1024.0) : 0.0,
              (*session)->options().backend.c_str(), (*session)->planned_signatures().size(),
              (*session)->planned_signatures().size() == 1 ? "" : "s", ms);
  return 0;
}

}  // namespace nfuse::cli
