#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli_common.h"
#include "commands.h"
#include "runtime/npy.h"

namespace nfuse::cli {

int cmd_run(const RunArgs& args) {
  auto shapes = parse_shapes(args.common.shapes);
  if (!shapes.ok()) return report(shapes.status());
  auto files = parse_inputs(args.inputs);
  if (!files.ok()) return report(files.status());
  auto session = open_session(args.common);
  if (!session.ok()) return report(session.status());
  auto inputs = make_inputs(**session, *files, *shapes);
  if (!inputs.ok()) return report(inputs.status());
  const auto t0 = std::chrono::steady_clock::now();
  auto outputs = (*session)->run(*inputs);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!outputs.ok()) return report(outputs.status());
  if (!args.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.output_dir, ec);
    if (ec) return report(unavailable("cannot create '" + args.output_dir + "': " + ec.message()));
  }
  std::printf("model    %s\nbackend  %s, %d thread(s)\ntime     %.2f ms (first run, includes planning)\n",
              args.common.model.c_str(), args.common.backend.c_str(), args.common.threads, ms);
  for (const auto& [name, t] : *inputs) {
    std::printf("input    %-24s %s %s%s\n", name.c_str(), std::string(ir::dtype_name(t.dtype())).c_str(),
                ir::dims_to_string(t.dims()).c_str(), files->count(name) ? "" : "  (seeded)");
  }
  const ir::Graph& g = (*session)->graph();
  bool all_finite = true;
  for (size_t i = 0; i < outputs->size(); ++i) {
    const ir::Tensor& t = (*outputs)[i];
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    int64_t non_finite = 0;
    for (int64_t k = 0; k < t.numel(); ++k) {
      const double v = t.get_double(k);
      if (!std::isfinite(v)) {
        ++non_finite;
        continue;
      }
      lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
    }
    all_finite = all_finite && non_finite == 0;
    const std::string& name = g.outputs()[i]->name;
    std::printf("output   %-24s %s %s  min %.4g max %.4g mean %.4g%s\n", name.c_str(),
                std::string(ir::dtype_name(t.dtype())).c_str(), ir::dims_to_string(t.dims()).c_str(), lo, hi,
                t.numel() ? sum / static_cast<double>(t.numel() - non_finite) : 0.0,
                non_finite ? ("  (" + std::to_string(non_finite) + " non-finite)").c_str() : "");
    if (!args.output_dir.empty()) {
      const std::string path = (std::filesystem::path(args.output_dir) / (file_safe(name) + ".npy")).string();
      Status s = runtime::write_npy(path, t);
      if (!s.ok()) return report(s);
      std::printf("         -> %s\n", path.c_str());
    }
  }
  if (!all_finite) std::printf("warning  some outputs contain NaN or Inf\n");
  return 0;
}

}  // namespace nfuse::cli
