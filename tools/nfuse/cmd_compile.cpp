// `nfuse compile`: import, optimize and plan a model as the flags say, then save the optimized
// graph, the plan options and the shape signatures as a context binary.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "commands.h"
#include "compile/context/sha256.h"
#include "core/mapped_file.h"
#include "runtime/context_model.h"

namespace nfuse::cli {

int cmd_compile(const CompileArgs& args) {
  const auto t0 = std::chrono::steady_clock::now();
  auto shapes = parse_shapes(args.common.shapes);
  if (!shapes.ok()) return report(shapes.status());
  if (runtime::is_context_file(args.common.model))
    return report(invalid_argument("'" + args.common.model + "' is already a context binary: compile its ONNX model"));
  auto sha = context::sha256_file(args.common.model);
  if (!sha.ok()) return report(sha.status());
  auto session = open_session(args.common);
  if (!session.ok()) return report(session.status());
  // Plans for the signature the flags give (symbolic dims as 1 otherwise), so placement errors
  // surface here and the binary records the shapes its sessions prepare at load.
  auto plan = (*session)->prepare((*session)->default_input_dims(*shapes));
  if (!plan.ok()) return report(with_assumed(plan.status(), assumed_inputs((*session)->graph(), *shapes)));
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
