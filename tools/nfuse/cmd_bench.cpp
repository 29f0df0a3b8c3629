#include <algorithm>
#include <chrono>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "commands.h"
#include "profile_table.h"

namespace nfuse::cli {

int cmd_bench(const BenchArgs& args) {
  auto shapes = parse_shapes(args.common.shapes);
  if (!shapes.ok()) return report(shapes.status());
  auto files = parse_inputs(args.inputs);
  if (!files.ok()) return report(files.status());
  auto session = open_session(args.common);
  if (!session.ok()) return report(session.status());
  auto inputs = make_inputs(**session, *files, *shapes);
  if (!inputs.ok()) return report(inputs.status());
  for (int i = 0; i < args.warmup; ++i) {
    auto out = (*session)->run(*inputs);
    if (!out.ok()) return report(out.status());
  }
  std::vector<double> ms;
  backends::RunProfile profile;
  for (int i = 0; i < args.runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    auto out = (*session)->run(*inputs, args.profile ? &profile : nullptr);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!out.ok()) return report(out.status());
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p * static_cast<double>(ms.size() - 1) + 0.5))]; };
  const double min_ms = ms.front(), median_ms = pct(0.5), p90_ms = pct(0.9);
  if (args.common.json) {
    nlohmann::json j = {{"model", args.common.model}, {"backend", args.common.backend}, {"threads", args.common.threads},
                        {"min_ms", min_ms},          {"median_ms", median_ms},        {"p90_ms", p90_ms},
                        {"peak_rss_mb", peak_rss_mb()}};
    if (args.profile) j["profile"] = profile_json(profile);
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model    %s\nbackend  %s, %d thread(s), %d warm-up + %d timed runs\n", args.common.model.c_str(),
              args.common.backend.c_str(), args.common.threads, args.warmup, args.runs);
  std::printf("latency  min %.3f ms  median %.3f ms  p90 %.3f ms\npeak RSS %.1f MiB\n", min_ms, median_ms, p90_ms,
              peak_rss_mb());
  if (args.profile) print_profile(profile, 15);
  return 0;
}

}  // namespace nfuse::cli
