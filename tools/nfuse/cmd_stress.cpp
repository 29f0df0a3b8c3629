// nfuse stress: several models at once on one runtime (priorities, periods, deadlines, fences and
// a synthetic render task), then the same load on the naive baseline (every session on its own
// runtime and threads, no priorities), with each model alone for the solo columns; all in one
// invocation, so the scheduler's gain is a ratio measured on one machine state.
#include <sys/resource.h>
#include <time.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "commands.h"
#include "device_state.h"
#include "public_session.h"
#include "stress_config.h"

namespace nfuse::cli {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

Clock::time_point at(Clock::time_point start, double ms) {
  return start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(ms));
}

double process_cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

double thread_cpu_ms() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) * 1e-6;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t i = std::min(v.size() - 1, static_cast<size_t>(std::ceil(p / 100.0 * v.size())) - (p > 0 ? 1 : 0));
  return v[i];
}

nfuse_priority priority_of(const std::string& name) {
  if (name == "low") return NFUSE_PRIORITY_LOW;
  if (name == "high") return NFUSE_PRIORITY_HIGH;
  if (name == "realtime") return NFUSE_PRIORITY_REALTIME;
  return NFUSE_PRIORITY_NORMAL;
}

nfuse_performance_mode mode_of(const std::string& name) {
  if (name == "burst") return NFUSE_PERFORMANCE_BURST;
  if (name == "balanced") return NFUSE_PERFORMANCE_BALANCED;
  if (name == "power_saver") return NFUSE_PERFORMANCE_POWER_SAVER;
  return NFUSE_PERFORMANCE_SUSTAINED_HIGH_PERFORMANCE;
}

// One model's client in one phase: its session, its requests' record, its latest request (what
// other contexts and the render task wait on).
struct Client {
  const StressContext* config = nullptr;
  ApiSession session;
  std::mutex latest_mutex;
  std::shared_ptr<Request> latest;
  std::vector<double> latency_ms, queue_wait_ms;
  size_t requests = 0, releases = 0, deadline_misses = 0, failed = 0, lost = 0, fence_violations = 0;
  double longest_unit_ms = 0.0;
  std::string first_error;

  std::shared_ptr<Request> latest_request() {
    std::lock_guard<std::mutex> lock(latest_mutex);
    return latest;
  }
};

struct RenderRecord {
  size_t frames = 0, missed = 0, new_results = 0, fence_violations = 0;
};

struct PhaseResult {
  nlohmann::json device;  // /sys temperatures and clocks at the phase's end
  double seconds = 0.0, cpu_seconds = 0.0;
  std::vector<std::unique_ptr<Client>> clients;
  std::optional<RenderRecord> render;
};

enum class PhaseKind { kScheduled, kBaseline, kSolo };

Status open_client(const StressConfig& config, const StressContext& ctx, const Runtime* shared, Client* c) {
  CommonArgs args;
  args.model = ctx.model;
  args.backend = ctx.backend;
  args.threads = config.threads;
  for (const auto& [name, dims] : ctx.shapes) {
    std::string text = name + "=";
    for (size_t i = 0; i < dims.size(); ++i) text += (i ? "x" : "") + std::to_string(dims[i]);
    args.shapes.push_back(text);
  }
  c->config = &ctx;
  Status s = open_api_session(args, {}, &c->session, shared);
  if (!s.ok()) return Status(s.code(), "context '" + ctx.name + "': " + s.message());
  for (int i = 0; i < 3; ++i) {  // first runs (page faults, lazily grown buffers) stay out of the phase
    auto out = c->session.session.run(c->session.feeds);
    if (!out.ok()) return Status(out.status().code(), "context '" + ctx.name + "': " + out.status().message());
  }
  return Status();
}

// The client loop: releases at the context's rate (or back to back), each request waiting on
// the latest request of the context it depends on; a release that finds the previous request
// still running is skipped and counted as a missed deadline (a dropped camera frame).
void run_client(Client& c, Client* depends_on, bool use_priority, Clock::time_point start, Clock::time_point end) {
  const StressContext& ctx = *c.config;
  const double period = ctx.hz > 0 ? 1000.0 / ctx.hz : 0.0;
  const double deadline = ctx.deadline_ms > 0 ? ctx.deadline_ms : period;
  auto options = RunOptions::create();
  if (!options.ok()) return;
  (void)options->set_label(ctx.name);
  if (use_priority) (void)options->set_priority(priority_of(ctx.priority));
  if (deadline > 0) (void)options->set_deadline(deadline);
  size_t k = 0;
  for (;;) {
    const Clock::time_point release = period > 0 ? at(start, static_cast<double>(k) * period) : Clock::now();
    if (release >= end) break;
    if (period > 0) std::this_thread::sleep_until(release);
    ++c.releases;
    (void)options->clear_wait_fences();
    std::shared_ptr<Request> waited;
    if (depends_on) {
      waited = depends_on->latest_request();
      if (waited) {
        auto f = waited->fence();
        if (f.ok()) (void)options->add_wait_fence(*f);
      }
    }
    auto submitted = c.session.session.submit(c.session.feeds, &*options);
    if (!submitted.ok()) {
      ++c.failed;
      if (c.first_error.empty()) c.first_error = submitted.status().to_string();
      break;
    }
    auto request = std::make_shared<Request>(std::move(*submitted));
    {
      std::lock_guard<std::mutex> lock(c.latest_mutex);
      c.latest = request;
    }
    Status s = request->wait();
    const Clock::time_point done = Clock::now();
    ++c.requests;
    if (!s.ok()) {
      ++c.failed;
      if (c.first_error.empty()) c.first_error = s.to_string();
    }
    // A request that ran must have found what it waited on settled.
    if (waited) {
      auto f = waited->fence();
      auto settled = f.ok() ? f->wait(0) : Result<bool>(false);
      if (s.ok() && settled.ok() && !*settled) ++c.fence_violations;
    }
    const double latency = ms_between(release, done);
    c.latency_ms.push_back(latency);
    auto stats = request->stats();
    if (stats.ok()) {
      const nlohmann::json j = nlohmann::json::parse(*stats);
      c.queue_wait_ms.push_back(j.value("queue_wait_ms", 0.0));
      c.longest_unit_ms = std::max(c.longest_unit_ms, j.value("longest_unit_ms", 0.0));
    } else {
      ++c.lost;  // settled requests always have stats: a request whose record vanished is lost
    }
    if (deadline > 0 && latency > deadline) ++c.deadline_misses;
    if (period > 0) {
      size_t next = k + 1;
      while (at(start, static_cast<double>(next) * period) < done) {  // releases that found it busy
        if (at(start, static_cast<double>(next) * period) < end) {
          ++c.releases;
          ++c.deadline_misses;
        }
        ++next;
      }
      k = next;
    }
  }
}

// The render task: frames at `fps`, each sampling the latest finished result of the context it
// waits on (a fence signalled must mean the outputs are there: each is read), then spending
// `cpu_ms` of its own CPU time; a frame that ends after its vsync, or never starts, is missed.
void run_render(const StressRender& r, Client* source, Clock::time_point start, Clock::time_point end,
                RenderRecord* out) {
  const double period = 1000.0 / r.fps;
  std::shared_ptr<Request> shown;
  size_t k = 0;
  for (;;) {
    const Clock::time_point release = at(start, static_cast<double>(k) * period);
    if (release >= end) break;
    std::this_thread::sleep_until(release);
    if (source) {
      std::shared_ptr<Request> latest = source->latest_request();
      if (latest && latest != shown) {
        auto f = latest->fence();
        auto settled = f.ok() ? f->wait(0) : Result<bool>(false);
        if (settled.ok() && *settled) {
          if (!latest->output(0).ok()) ++out->fence_violations;
          shown = latest;
          ++out->new_results;
        }
      }
    }
    const double cpu0 = thread_cpu_ms();
    while (thread_cpu_ms() - cpu0 < r.cpu_ms) {
    }
    const Clock::time_point done = Clock::now();
    ++out->frames;
    if (done > at(start, static_cast<double>(k + 1) * period)) ++out->missed;
    size_t next = k + 1;
    while (at(start, static_cast<double>(next) * period) < done) {
      if (at(start, static_cast<double>(next) * period) < end) {
        ++out->frames;
        ++out->missed;
      }
      ++next;
    }
    k = next;
  }
}

Result<PhaseResult> run_phase(const StressConfig& config, PhaseKind kind, const std::vector<size_t>& which,
                              double seconds, const std::string& trace_path) {
  PhaseResult result;
  std::vector<Runtime> runtimes;
  auto make_runtime = [&]() -> Status {
    auto rt = Runtime::create();
    if (!rt.ok()) return rt.status();
    Status s = rt->set_performance_mode(mode_of(config.mode));
    // The naive baseline leaves thread placement to the OS: several runtimes pinning their
    // threads would pile them onto the same CPUs.
    if (s.ok() && kind == PhaseKind::kBaseline) s = rt->set_thread_pinning(false);
    if (!s.ok()) return s;
    runtimes.push_back(std::move(*rt));
    return Status();
  };
  if (kind != PhaseKind::kBaseline) {
    Status s = make_runtime();
    if (!s.ok()) return s;
  }
  for (size_t i : which) {
    if (kind == PhaseKind::kBaseline) {
      Status s = make_runtime();
      if (!s.ok()) return s;
    }
    auto c = std::make_unique<Client>();
    Status s = open_client(config, config.contexts[i], &runtimes.back(), c.get());
    if (!s.ok()) return s;
    result.clients.push_back(std::move(c));
  }
  auto find = [&](const std::string& n) -> Client* {
    for (auto& c : result.clients)
      if (c->config->name == n) return c.get();
    return nullptr;
  };
  const bool tracing = !trace_path.empty() && kind == PhaseKind::kScheduled;
  if (tracing) {
    Status s = runtimes.front().set_tracing(true);
    if (!s.ok()) return s;
  }
  const double cpu0 = process_cpu_seconds();
  const Clock::time_point start = Clock::now() + std::chrono::milliseconds(20);
  const Clock::time_point end = at(start, seconds * 1000.0);
  std::vector<std::thread> threads;
  for (auto& c : result.clients) {
    Client* dep = c->config->waits_on.empty() ? nullptr : find(c->config->waits_on);
    threads.emplace_back(run_client, std::ref(*c), dep, kind != PhaseKind::kBaseline, start, end);
  }
  RenderRecord render;
  const bool with_render = config.render && kind != PhaseKind::kSolo;
  if (with_render)
    threads.emplace_back(run_render, std::cref(*config.render),
                         config.render->waits_on.empty() ? nullptr : find(config.render->waits_on), start, end,
                         &render);
  for (std::thread& t : threads) t.join();
  result.seconds = std::max(seconds, ms_between(start, Clock::now()) / 1e3);
  result.cpu_seconds = process_cpu_seconds() - cpu0;
  result.device = read_device_state();
  if (with_render) result.render = render;
  if (tracing) {
    auto text = runtimes.front().trace();
    if (!text.ok()) return text.status();
    std::ofstream f(trace_path);
    f << *text;
    if (!f) return Status(NFUSE_UNAVAILABLE, "cannot write the trace to '" + trace_path + "'");
  }
  for (auto& c : result.clients) c->session = ApiSession();  // sessions before their runtimes
  return result;
}

struct Solo {
  double p99_ms = 0.0, throughput_hz = 0.0;
};

nlohmann::json phase_json(const PhaseResult& p, const std::map<std::string, Solo>& solo) {
  nlohmann::json contexts = nlohmann::json::object();
  size_t violations = 0, lost = 0, failed = 0, requests = 0;
  for (const auto& c : p.clients) {
    const double p50 = percentile(c->latency_ms, 50), p99 = percentile(c->latency_ms, 99);
    nlohmann::json j = {
        {"priority", c->config->priority},
        {"hz", c->config->hz},
        {"requests", c->requests},
        {"releases", c->releases},
        {"p50_ms", p50},
        {"p90_ms", percentile(c->latency_ms, 90)},
        {"p99_ms", p99},
        {"jitter_p99_over_p50", p50 > 0 ? p99 / p50 : 0.0},
        {"queue_wait_p99_ms", percentile(c->queue_wait_ms, 99)},
        {"deadline_misses", c->deadline_misses},
        {"deadlines_met",
         c->releases ? 1.0 - static_cast<double>(c->deadline_misses) / static_cast<double>(c->releases) : 1.0},
        {"throughput_hz", static_cast<double>(c->requests) / p.seconds},
        {"longest_unit_ms", c->longest_unit_ms},
        {"failed", c->failed}};
    auto s = solo.find(c->config->name);
    if (s != solo.end()) {
      j["solo_p99_ms"] = s->second.p99_ms;
      j["solo_throughput_hz"] = s->second.throughput_hz;
      j["p99_over_solo"] = s->second.p99_ms > 0 ? p99 / s->second.p99_ms : 0.0;
      j["throughput_share_of_solo"] =
          s->second.throughput_hz > 0 ? static_cast<double>(c->requests) / p.seconds / s->second.throughput_hz : 0.0;
    }
    if (!c->first_error.empty()) j["first_error"] = c->first_error;
    contexts[c->config->name] = j;
    violations += c->fence_violations;
    lost += c->lost;
    failed += c->failed;
    requests += c->requests;
  }
  nlohmann::json out = {
      {"seconds", p.seconds},
      {"contexts", contexts},
      {"fence_violations", violations + (p.render ? p.render->fence_violations : 0)},
      {"requests_lost", lost},
      {"requests_failed", failed},
      {"cpu_seconds", p.cpu_seconds},
      {"cpu_utilisation", p.cpu_seconds / (p.seconds * std::max(1u, std::thread::hardware_concurrency()))},
      {"cpu_seconds_per_request", requests ? p.cpu_seconds / static_cast<double>(requests) : 0.0}};
  out["device"] = p.device;
  if (p.render)
    out["render"] = {
        {"frames", p.render->frames}, {"frames_missed", p.render->missed}, {"new_results", p.render->new_results}};
  return out;
}

void print_phase(const std::string& title, const nlohmann::json& j) {
  std::printf("%s (%.1f s):\n", title.c_str(), j["seconds"].get<double>());
  std::printf("  %-10s %-8s %5s %7s %8s %8s %8s %8s %8s %8s %7s %9s %7s %9s %9s\n", "context", "priority", "hz", "reqs",
              "thr Hz", "solo Hz", "p50 ms", "p90 ms", "p99 ms", "solo p99", "p99/p50", "p99/solo", "misses",
              "queue p99", "max unit");
  for (const auto& [name, c] : j["contexts"].items())
    std::printf("  %-10s %-8s %5.0f %7zu %8.2f %8.2f %8.2f %8.2f %8.2f %8.2f %7.2f %9.2f %7zu %9.2f %9.2f\n",
                name.c_str(), c["priority"].get<std::string>().c_str(), c["hz"].get<double>(),
                c["requests"].get<size_t>(), c["throughput_hz"].get<double>(), c.value("solo_throughput_hz", 0.0),
                c["p50_ms"].get<double>(), c["p90_ms"].get<double>(), c["p99_ms"].get<double>(),
                c.value("solo_p99_ms", 0.0), c["jitter_p99_over_p50"].get<double>(), c.value("p99_over_solo", 0.0),
                c["deadline_misses"].get<size_t>(), c["queue_wait_p99_ms"].get<double>(),
                c["longest_unit_ms"].get<double>());
  if (j.contains("render"))
    std::printf("  render: %zu frames, %zu missed (%.2f%%), %zu new results shown\n",
                j["render"]["frames"].get<size_t>(), j["render"]["frames_missed"].get<size_t>(),
                100.0 * static_cast<double>(j["render"]["frames_missed"].get<size_t>()) /
                    std::max<double>(1.0, static_cast<double>(j["render"]["frames"].get<size_t>())),
                j["render"]["new_results"].get<size_t>());
  auto device_text = [](const nlohmann::json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); };
  std::printf("  temperature %s, CPU clocks (MHz) %s\n", device_text(j["device"]["thermal_c"]).c_str(),
              device_text(j["device"]["cpufreq_mhz"]).c_str());
  std::printf("  fence violations %zu, requests lost %zu, failed %zu; CPU %.1f%% of %u cores, %.4f CPU-s per request\n",
              j["fence_violations"].get<size_t>(), j["requests_lost"].get<size_t>(), j["requests_failed"].get<size_t>(),
              100.0 * j["cpu_utilisation"].get<double>(), std::max(1u, std::thread::hardware_concurrency()),
              j["cpu_seconds_per_request"].get<double>());
}

}  // namespace

int cmd_stress(const StressArgs& args) {
  StressConfig config;
  if (!args.config.empty()) {
    std::ifstream f(args.config);
    if (!f) return report_api(Status(NFUSE_UNAVAILABLE, "cannot read the config '" + args.config + "'"));
    std::stringstream text;
    text << f.rdbuf();
    const std::string error = parse_stress_config(text.str(), &config);
    if (!error.empty()) return report_api(Status(NFUSE_INVALID_ARGUMENT, args.config + ": " + error));
  }
  for (const std::string& flag : args.contexts) {
    StressContext ctx;
    const std::string error = parse_stress_context_flag(flag, &ctx);
    if (!error.empty()) return report_api(Status(NFUSE_INVALID_ARGUMENT, error));
    config.contexts.push_back(ctx);
  }
  if (args.duration_s > 0) config.duration_s = args.duration_s;
  if (args.solo_s > 0) config.solo_s = args.solo_s;
  if (args.threads > 0) config.threads = args.threads;
  if (!args.mode.empty()) config.mode = args.mode;
  if (args.no_baseline) config.baseline = false;
  const std::string error = check_stress_config(config);
  if (!error.empty()) return report_api(Status(NFUSE_INVALID_ARGUMENT, error));
  const double solo_s = config.solo_s > 0 ? config.solo_s : std::min(config.duration_s, 10.0);

  std::map<std::string, Solo> solo;
  for (size_t i = 0; i < config.contexts.size(); ++i) {
    auto p = run_phase(config, PhaseKind::kSolo, {i}, solo_s, "");
    if (!p.ok()) return report_api(p.status());
    const Client& c = *p->clients.front();
    solo[c.config->name] = {percentile(c.latency_ms, 99), static_cast<double>(c.requests) / p->seconds};
  }
  std::vector<size_t> all(config.contexts.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  auto scheduled = run_phase(config, PhaseKind::kScheduled, all, config.duration_s, args.trace);
  if (!scheduled.ok()) return report_api(scheduled.status());
  nlohmann::json report = phase_json(*scheduled, solo);
  report["threads"] = config.threads;
  report["mode"] = config.mode;
  report["duration_s"] = config.duration_s;
  report["solo_s"] = solo_s;
  if (config.baseline) {
    auto baseline = run_phase(config, PhaseKind::kBaseline, all, config.duration_s, "");
    if (!baseline.ok()) return report_api(baseline.status());
    report["baseline"] = phase_json(*baseline, solo);
  }
  print_phase("scheduled: one runtime, " + std::to_string(config.threads) + " threads, " + config.mode +
                  ", priorities and fences",
              report);
  if (report.contains("baseline")) {
    print_phase("baseline: every session on its own runtime and threads, no priorities", report["baseline"]);
    for (const auto& [name, c] : report["contexts"].items()) {
      const double base = report["baseline"]["contexts"][name]["p99_ms"].get<double>();
      const double mine = c["p99_ms"].get<double>();
      std::printf("  %s: p99 %.2f ms scheduled vs %.2f ms baseline (%.2fx lower)\n", name.c_str(), mine, base,
                  mine > 0 ? base / mine : 0.0);
    }
  }
  if (!args.json.empty()) {
    std::ofstream f(args.json);
    f << report.dump(2) << "\n";
    if (!f) return report_api(Status(NFUSE_UNAVAILABLE, "cannot write '" + args.json + "'"));
  }
  const bool clean = report["fence_violations"].get<size_t>() == 0 && report["requests_lost"].get<size_t>() == 0 &&
                     report["requests_failed"].get<size_t>() == 0;
  if (!clean) std::fprintf(stderr, "nfuse: error: fence violations, lost or failed requests (see above)\n");
  return clean ? 0 : 1;
}

}  // namespace nfuse::cli
