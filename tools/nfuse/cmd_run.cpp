// `nfuse run`: one run through the public API, a one-screen summary, outputs as .npy files.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "cli_flags.h"
#include "commands.h"
#include "public_session.h"

namespace nfuse::cli {

int cmd_run(const RunArgs& args) {
  ApiSession s;
  Status st = open_api_session(args.common, args.inputs, &s);
  if (!st.ok()) return report_api(st);
  auto run_options = RunOptions::create();
  if (!run_options.ok()) return report_api(run_options.status());
  if (!args.trace.empty()) {  // nodes timed for the trace
    st = run_options->set_profiling(true);
    if (!st.ok()) return report_api(st);
  }
  const auto t0 = std::chrono::steady_clock::now();
  auto outputs = s.session.run(s.feeds, &*run_options);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (!outputs.ok()) return report_run_failure(outputs.status(), s);
  if (!args.trace.empty()) {
    st = write_trace(s.session, args.trace);
    if (!st.ok()) return report_api(st);
  }
  if (!args.stats.empty()) {
    std::FILE* f = std::fopen(args.stats.c_str(), "a");
    if (!f) return report_api(Status(NFUSE_UNAVAILABLE, "cannot open '" + args.stats + "' for the run statistics"));
    st = write_run_stats(s.session, f, "run");
    std::fclose(f);
    if (!st.ok()) return report_api(st);
  }
  if (!args.output_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.output_dir, ec);
    if (ec) return report_api(Status(NFUSE_UNAVAILABLE, "cannot create '" + args.output_dir + "': " + ec.message()));
  }
  std::printf(
      "model    %s\nbackend  %s, %d thread(s)\nsession  %.2f ms (%s)\n"
      "time     %.2f ms (first run; plans symbolic shapes)\n",
      args.common.model.c_str(), s.backend.c_str(), args.common.threads, s.open_ms,
      s.from_context ? "context binary: map, validate, planning of its shapes"
                     : "import, optimization, planning of static shapes",
      ms);
  auto dims_text = [](const std::vector<int64_t>& dims) {
    std::string t;
    for (size_t i = 0; i < dims.size(); ++i) t += (i ? "x" : "") + std::to_string(dims[i]);
    return t.empty() ? std::string("scalar") : t;
  };
  for (size_t i = 0; i < s.inputs.size(); ++i) {
    const Tensor& t = s.input_tensors[i];
    std::printf("input    %-24s %s %s%s\n", s.inputs[i].name.c_str(), nfuse_dtype_name(t.dtype()),
                dims_text(t.dims()).c_str(), s.input_seeded[i] ? "  (seeded)" : "");
  }
  if (!s.assumed.empty()) std::printf("assumed  %s\n", assumed_dims_note(s.assumed).c_str());
  bool all_finite = true;
  for (size_t i = 0; i < outputs->size(); ++i) {
    const Tensor& t = (*outputs)[i];
    const size_t n = nfuse_dtype_size(t.dtype()) ? t.byte_size() / nfuse_dtype_size(t.dtype()) : 0;
    double lo = INFINITY, hi = -INFINITY, sum = 0;
    size_t non_finite = 0;
    for (size_t k = 0; k < n; ++k) {
      const double v = element_as_double(t, k);
      if (!std::isfinite(v)) {
        ++non_finite;
        continue;
      }
      lo = std::min(lo, v), hi = std::max(hi, v), sum += v;
    }
    all_finite = all_finite && non_finite == 0;
    const std::string& name = s.outputs[i].name;
    std::printf("output   %-24s %s %s  min %.4g max %.4g mean %.4g%s\n", name.c_str(), nfuse_dtype_name(t.dtype()),
                dims_text(t.dims()).c_str(), lo, hi, n ? sum / static_cast<double>(n - non_finite) : 0.0,
                non_finite ? ("  (" + std::to_string(non_finite) + " non-finite)").c_str() : "");
    if (!args.output_dir.empty()) {
      const std::string path = (std::filesystem::path(args.output_dir) / (file_safe(name) + ".npy")).string();
      Status w = t.save_npy(path);
      if (!w.ok()) return report_api(w);
      std::printf("         -> %s\n", path.c_str());
    }
  }
  if (!all_finite) std::printf("warning  some outputs contain NaN or Inf\n");
  return 0;
}

}  // namespace nfuse::cli
