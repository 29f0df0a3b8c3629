#include <algorithm>
#include <map>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cli_common.h"
#include "compile/plan_traffic.h"
#include "commands.h"
#include "profile_table.h"

namespace nfuse::cli {

namespace {

// Current (not peak) resident set size in MiB, from /proc/self/status VmRSS; -1 where unknown.
double current_rss_mb() {
  double mb = -1.0;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      long kib = 0;
      if (std::strncmp(line, "VmRSS:", 6) == 0 && std::sscanf(line + 6, "%ld", &kib) == 1) mb = static_cast<double>(kib) / 1024.0;
    }
    std::fclose(f);
  }
  return mb;
}

void print_traffic(const compile::PlanTraffic& t) {
  const double mb = 1.0 / (1024.0 * 1024.0);
  std::printf("traffic  arena MiB per inference: %.2f as executed, %.2f layer by layer (%.1f%%)\n",
              static_cast<double>(t.fused_bytes) * mb, static_cast<double>(t.layerwise_bytes) * mb,
              t.layerwise_bytes ? 100.0 * static_cast<double>(t.fused_bytes) / static_cast<double>(t.layerwise_bytes) : 100.0);
  bool header = false;
  for (const compile::StepTraffic& s : t.steps) {
    for (const backends::GroupTraffic& g : s.groups) {
      if (!header) {
        std::printf("  %-48s %5s %5s %10s %10s %9s\n", "fused group", "nodes", "rows", "fused MiB", "layer MiB", "scratch");
        header = true;
      }
      std::printf("  %-48.48s %5zu %5d %10.2f %10.2f %7.0f K\n", g.label.c_str(), g.nodes.size(), g.tile_rows,
                  static_cast<double>(g.fused_bytes) * mb, static_cast<double>(g.layerwise_bytes) * mb,
                  static_cast<double>(g.scratch_bytes) / 1024.0);
    }
  }
}

}  // namespace

int cmd_bench(const BenchArgs& args) {
  // Memory figures (all getrusage ru_maxrss high-water marks of this process, MiB, except
  // final_rss_mb): baseline = before anything is loaded (the pages of the nfuse binary and its
  // shared libraries touched so far, plus argument parsing: what a process with no model costs,
  // no thread pool yet); session = after the
  // model is imported, optimized, compiled/prepacked and the inputs made, before any run;
  // peak = after warm-up and timed runs (adds the arena, scratch and outputs); final = VmRSS
  // at the end (what stays resident, vs. transient peaks during import/compile).
  const double baseline_rss = peak_rss_mb();
  auto shapes = parse_shapes(args.common.shapes);
  if (!shapes.ok()) return report(shapes.status());
  auto files = parse_inputs(args.inputs);
  if (!files.ok()) return report(files.status());
  auto session = open_session(args.common);
  if (!session.ok()) return report(session.status());
  auto inputs = make_inputs(**session, *files, *shapes);
  if (!inputs.ok()) return report(inputs.status());
  const double session_rss = peak_rss_mb();
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
  std::map<std::string, std::vector<int64_t>> dims;
  for (const auto& [name, t] : *inputs) dims[name] = t.dims();
  auto plan = (*session)->prepare(dims);
  if (!plan.ok()) return report(plan.status());
  const compile::PlanTraffic traffic = compile::plan_traffic(**plan);
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) { return ms[std::min(ms.size() - 1, static_cast<size_t>(p * static_cast<double>(ms.size() - 1) + 0.5))]; };
  const double min_ms = ms.front(), median_ms = pct(0.5), p90_ms = pct(0.9);
  if (args.common.json) {
    nlohmann::json j = {{"model", args.common.model}, {"backend", args.common.backend}, {"threads", args.common.threads},
                        {"min_ms", min_ms},          {"median_ms", median_ms},        {"p90_ms", p90_ms},
                        {"peak_rss_mb", peak_rss_mb()}, {"baseline_rss_mb", baseline_rss},
                        {"session_peak_rss_mb", session_rss}, {"final_rss_mb", current_rss_mb()}};
    if (args.profile) j["profile"] = profile_json(profile);
    j["arena_bytes_fused"] = traffic.fused_bytes;
    j["arena_bytes_layerwise"] = traffic.layerwise_bytes;
    if (args.traffic) {
      nlohmann::json groups = nlohmann::json::array();
      for (const compile::StepTraffic& st : traffic.steps)
        for (const backends::GroupTraffic& g : st.groups)
          groups.push_back({{"label", g.label}, {"nodes", g.nodes}, {"tile_rows", g.tile_rows},
                            {"fused_bytes", g.fused_bytes}, {"layerwise_bytes", g.layerwise_bytes},
                            {"scratch_bytes", g.scratch_bytes}});
      j["fused_groups"] = groups;
    }
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model    %s\nbackend  %s, %d thread(s), %d warm-up + %d timed runs\n", args.common.model.c_str(),
              args.common.backend.c_str(), args.common.threads, args.warmup, args.runs);
  std::printf("latency  min %.3f ms  median %.3f ms  p90 %.3f ms\n", min_ms, median_ms, p90_ms);
  std::printf("peak RSS %.1f MiB (process baseline %.1f MiB, after session creation %.1f MiB, resident at end %.1f MiB)\n",
              peak_rss_mb(), baseline_rss, session_rss, current_rss_mb());
  if (args.traffic) print_traffic(traffic);
  if (args.profile) print_profile(profile, 15);
  return 0;
}

}  // namespace nfuse::cli
