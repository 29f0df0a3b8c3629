// `nfuse bench`: warm-up and timed runs through the public API; latency, memory, and on request
// the arena traffic and the per-node profile that the session reports.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli_flags.h"
#include "commands.h"
#include "profile_table.h"
#include "public_session.h"

namespace nfuse::cli {

namespace {

// Current (not peak) resident set size in MiB, from /proc/self/status VmRSS; -1 where unknown.
double current_rss_mb() {
  double mb = -1.0;
  if (std::FILE* f = std::fopen("/proc/self/status", "r")) {
    char line[256];
    while (std::fgets(line, sizeof line, f)) {
      long kib = 0;
      if (std::strncmp(line, "VmRSS:", 6) == 0 && std::sscanf(line + 6, "%ld", &kib) == 1)
        mb = static_cast<double>(kib) / 1024.0;
    }
    std::fclose(f);
  }
  return mb;
}

void print_traffic(const nlohmann::json& t) {
  const double mb = 1.0 / (1024.0 * 1024.0);
  const double fused = t.at("arena_bytes_fused").get<double>(), layer = t.at("arena_bytes_layerwise").get<double>();
  std::printf("traffic  arena MiB per inference: %.2f as executed, %.2f layer by layer (%.1f%%)\n", fused * mb,
              layer * mb, layer > 0 ? 100.0 * fused / layer : 100.0);
  bool header = false;
  for (const nlohmann::json& g : t.at("fused_groups")) {
    if (!header) {
      std::printf("  %-48s %5s %5s %10s %10s %9s\n", "fused group", "nodes", "rows", "fused MiB", "layer MiB",
                  "scratch");
      header = true;
    }
    std::printf("  %-48.48s %5zu %5d %10.2f %10.2f %7.0f K\n", g.at("label").get<std::string>().c_str(),
                g.at("nodes").size(), g.at("tile_rows").get<int>(), g.at("fused_bytes").get<double>() * mb,
                g.at("layerwise_bytes").get<double>() * mb, g.at("scratch_bytes").get<double>() / 1024.0);
  }
}

Result<nlohmann::json> parse(Result<std::string> text) {
  if (!text.ok()) return text.status();
  return nlohmann::json::parse(*text);
}

}  // namespace

int cmd_bench(const BenchArgs& args) {
  // Memory figures (all getrusage ru_maxrss high-water marks of this process, MiB, except
  // final_rss_mb): baseline = before anything is loaded (the pages of the nfuse binary and its
  // shared libraries touched so far, plus argument parsing: what a process with no model costs,
  // no thread pool yet); session = after the model is imported, optimized, compiled/prepacked and
  // the inputs made, before any run; peak = after warm-up and timed runs (adds the arena, scratch
  // and outputs); final = VmRSS at the end (what stays resident, vs. transient peaks).
  const double baseline_rss = peak_rss_mb();
  ApiSession s;
  Status st = open_api_session(args.common, args.inputs, &s);
  if (!st.ok()) return report_api(st);
  const double session_rss = peak_rss_mb();
  // --bind: inputs read in place, outputs written into buffers bound once (their dims from one
  // unbound run, which warms up like any other); every run then goes through run_bound.
  std::vector<Tensor> bound_outputs;
  if (args.bind) {
    auto first = s.session.run(s.feeds);
    if (!first.ok()) return report_run_failure(first.status(), s);
    for (size_t i = 0; i < s.inputs.size(); ++i) {
      st = s.session.bind_input(s.inputs[i].name, s.input_tensors[i]);
      if (!st.ok()) return report_api(st);
    }
    for (size_t i = 0; i < s.outputs.size(); ++i) {
      auto t = Tensor::create((*first)[i].dtype(), (*first)[i].dims());
      if (!t.ok()) return report_api(t.status());
      bound_outputs.push_back(std::move(*t));
      st = s.session.bind_output(s.outputs[i].name, bound_outputs.back());
      if (!st.ok()) return report_api(st);
    }
  }
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> stats(nullptr, std::fclose);
  if (!args.stats.empty()) {
    stats.reset(std::fopen(args.stats.c_str(), "w"));
    if (!stats) return report_api(Status(NFUSE_UNAVAILABLE, "cannot open '" + args.stats + "' for the run statistics"));
  }
  auto run_once = [&](const RunOptions* options) -> Status {
    Status ran;
    if (args.bind) {
      ran = s.session.run_bound(options);
    } else {
      auto out = s.session.run(s.feeds, options);
      if (!out.ok()) ran = out.status();
    }
    return ran;
  };
  // After the clock stopped: the statistics record is not part of the time it reports.
  auto record = [&](const char* phase) { return stats ? write_run_stats(s.session, stats.get(), phase) : Status(); };
  // TFLite benchmark_model's shape: init (open_ms), the first inference, the warm-up average.
  double first_ms = 0.0, warmup_ms = 0.0;
  for (int i = 0; i < args.warmup; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status ran = run_once(nullptr);
    const double run_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    if (!ran.ok()) return report_run_failure(ran, s);
    if (i == 0) first_ms = run_ms;
    warmup_ms += run_ms;
    if (Status w = record("warmup"); !w.ok()) return report_api(w);
  }
  const double warmup_avg_ms = args.warmup > 0 ? warmup_ms / args.warmup : 0.0;
  auto run_options = RunOptions::create();
  if (!run_options.ok()) return report_api(run_options.status());
  if (args.profile || !args.trace.empty()) {
    st = run_options->set_profiling(true);
    if (!st.ok()) return report_api(st);
  }
  std::vector<double> ms;
  for (int i = 0; i < args.runs; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    Status ran = run_once(&*run_options);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    if (!ran.ok()) return report_run_failure(ran, s);
    if (Status w = record("timed"); !w.ok()) return report_api(w);
  }
  if (!args.trace.empty()) {
    st = write_trace(s.session, args.trace);
    if (!st.ok()) return report_api(st);
  }
  auto traffic = parse(s.session.traffic());
  if (!traffic.ok()) return report_api(traffic.status());
  nlohmann::json profile;
  if (args.profile) {
    auto p = parse(s.session.profile());
    if (!p.ok()) return report_api(p.status());
    profile = std::move(*p);
  }
  std::sort(ms.begin(), ms.end());
  auto pct = [&](double p) {
    return ms[std::min(ms.size() - 1, static_cast<size_t>(p * static_cast<double>(ms.size() - 1) + 0.5))];
  };
  const double min_ms = ms.front(), median_ms = pct(0.5), p90_ms = pct(0.9), p99_ms = pct(0.99);
  if (args.common.json) {
    nlohmann::json j = {{"model", args.common.model},
                        {"backend", s.backend},
                        {"threads", args.common.threads},
                        {"init_ms", s.open_ms},
                        {"first_ms", first_ms},
                        {"warmup_avg_ms", warmup_avg_ms},
                        {"bound_io", args.bind},
                        {"min_ms", min_ms},
                        {"median_ms", median_ms},
                        {"p90_ms", p90_ms},
                        {"p99_ms", p99_ms},
                        {"peak_rss_mb", peak_rss_mb()},
                        {"baseline_rss_mb", baseline_rss},
                        {"session_peak_rss_mb", session_rss},
                        {"final_rss_mb", current_rss_mb()}};
    if (args.profile) {
      j["profile"] = profile;
      j["ref_time_share"] = profile.value("ref_time_share", 0.0);
    }
    if (args.bind) {
      auto copied = s.session.copied_bytes();
      if (!copied.ok()) return report_api(copied.status());
      j["copied_input_bytes"] = copied->first;
      j["copied_output_bytes"] = copied->second;
    }
    j["arena_bytes_fused"] = traffic->at("arena_bytes_fused");
    j["arena_bytes_layerwise"] = traffic->at("arena_bytes_layerwise");
    if (args.traffic) j["fused_groups"] = traffic->at("fused_groups");
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("model    %s\nbackend  %s, %d thread(s), %d warm-up + %d timed runs\n", args.common.model.c_str(),
              s.backend.c_str(), args.common.threads, args.warmup, args.runs);
  std::printf("init     %.2f ms, first inference %.2f ms, warm-up average %.2f ms\n", s.open_ms, first_ms,
              warmup_avg_ms);
  std::printf("latency  min %.3f ms  median %.3f ms  p90 %.3f ms  p99 %.3f ms\n", min_ms, median_ms, p90_ms, p99_ms);
  if (args.bind) {
    auto copied = s.session.copied_bytes();
    if (!copied.ok()) return report_api(copied.status());
    std::printf("bound    inputs and outputs bound once: %llu bytes copied from inputs, %llu into outputs per run\n",
                static_cast<unsigned long long>(copied->first), static_cast<unsigned long long>(copied->second));
  }
  std::printf(
      "peak RSS %.1f MiB (process baseline %.1f MiB, after session creation %.1f MiB, resident at end %.1f MiB)\n",
      peak_rss_mb(), baseline_rss, session_rss, current_rss_mb());
  if (args.traffic) print_traffic(*traffic);
  if (args.profile) print_profile(profile, 15);
  return 0;
}

}  // namespace nfuse::cli
