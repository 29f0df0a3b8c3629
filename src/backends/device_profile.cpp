#include "backends/device_profile.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "backends/backend.h"
#include "kernels/cpu_features.h"
#include "kernels/f32-dwconv/f32_dwconv.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::backends {
namespace {

constexpr int kFormatVersion = 1;

// The built-in host numbers: measured on the development machine (AMD EPYC, AVX-512) with
// `nfuse device-profile` and rounded; the partitioner only needs their ratios right.
BackendProfile default_host() {
  BackendProfile p;
  p.backend = "cpu";
  p.gflops_f32 = 100.0;
  p.gflops_f32_depthwise = 30.0;
  p.gflops_int8 = 200.0;
  p.dram_gbps = 15.0;
  p.l2_gbps = 66.0;
  p.l2_bytes = 512 * 1024;
  p.l3_bytes = 32 * 1024 * 1024;
  // `nfuse device-profile` measures ~0.05 us per node and per cpu<->ref boundary with one
  // thread; a boundary between two backends' thread pools costs more once threads hand over, so
  // the default boundary is set well above the single-thread figure.
  p.step_us = 0.05;
  p.boundary_us = 1.0;
  return p;
}

// The host entry is the general fallback's (the backend that runs on the host's cores).
BackendProfile host_entry_name(BackendProfile p) {
  const std::string fallback = BackendRegistry::global().general_fallback();
  if (!fallback.empty()) p.backend = fallback;
  return p;
}

// Every registered backend's numbers derived from the host's, in registry order.
std::vector<BackendProfile> derive_all(const BackendProfile& host) {
  std::vector<BackendProfile> out;
  for (const std::string& name : BackendRegistry::global().names()) {
    auto backend = BackendRegistry::global().create(name);
    if (backend.ok()) out.push_back((*backend)->cost_profile(host));
  }
  return out;
}

nlohmann::json to_json(const BackendProfile& p) {
  return {
      {"backend", p.backend},         {"gflops_f32", p.gflops_f32},  {"gflops_f32_depthwise", p.gflops_f32_depthwise},
      {"gflops_int8", p.gflops_int8}, {"dram_gbps", p.dram_gbps},    {"l2_gbps", p.l2_gbps},
      {"l2_bytes", p.l2_bytes},       {"l3_bytes", p.l3_bytes},      {"step_us", p.step_us},
      {"boundary_us", p.boundary_us}, {"host_shared", p.host_shared}};
}

// Reads one field of backends[i]; the error names file, entry and field.
class FieldReader {
 public:
  FieldReader(const std::string& path, const nlohmann::json& obj, size_t index)
      : path_(path), obj_(obj), where_("backends[" + std::to_string(index) + "]") {}

  Status number(const char* field, double* out, bool positive) const {
    auto it = obj_.find(field);
    if (it == obj_.end() || !it->is_number()) return bad(field, "must be a number");
    *out = it->get<double>();
    if (*out < 0.0 || (positive && *out == 0.0)) return bad(field, positive ? "must be > 0" : "must be >= 0");
    return ok_status();
  }
  Status integer(const char* field, int64_t* out) const {
    auto it = obj_.find(field);
    if (it == obj_.end() || !it->is_number_integer() || it->get<int64_t>() <= 0) {
      return bad(field, "must be a positive integer");
    }
    *out = it->get<int64_t>();
    return ok_status();
  }
  Status boolean(const char* field, bool* out) const {
    auto it = obj_.find(field);
    if (it == obj_.end()) return ok_status();  // flags default to the plain-CPU behaviour
    if (!it->is_boolean()) return bad(field, "must be true or false");
    *out = it->get<bool>();
    return ok_status();
  }
  Status bad(const char* field, const char* what) const {
    return invalid_argument("device profile '" + path_ + "': " + where_ + "." + field + " " + what);
  }

 private:
  const std::string& path_;
  const nlohmann::json& obj_;
  std::string where_;
};

Result<BackendProfile> parse_backend(const std::string& path, const nlohmann::json& obj, size_t index) {
  FieldReader r(path, obj, index);
  if (!obj.is_object()) return r.bad("", "must be an object");
  BackendProfile p;
  auto name = obj.find("backend");
  if (name == obj.end() || !name->is_string() || name->get<std::string>().empty()) {
    return r.bad("backend", "must be a backend name");
  }
  p.backend = name->get<std::string>();
  NFUSE_RETURN_IF_ERROR_PLAIN(r.number("gflops_f32", &p.gflops_f32, true));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.number("gflops_f32_depthwise", &p.gflops_f32_depthwise, true));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.number("gflops_int8", &p.gflops_int8, true));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.number("dram_gbps", &p.dram_gbps, true));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.number("l2_gbps", &p.l2_gbps, true));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.integer("l2_bytes", &p.l2_bytes));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.integer("l3_bytes", &p.l3_bytes));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.number("step_us", &p.step_us, false));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.number("boundary_us", &p.boundary_us, false));
  NFUSE_RETURN_IF_ERROR_PLAIN(r.boolean("host_shared", &p.host_shared));
  // Fields of how a backend executes (keeps_intermediates_on_chip, winograd_3x3) that files of
  // earlier versions carry are its traits and cost rules now: ignored here.
  return p;
}

using Clock = std::chrono::steady_clock;

// Runs `body` (one repetition) until `budget_s` has passed (at least twice); seconds per rep,
// the best of three equal slices so a preempted slice does not count.
template <typename F>
double seconds_per_rep(double budget_s, F&& body) {
  body();  // warm caches and page in memory
  double best = 1e30;
  for (int slice = 0; slice < 3; ++slice) {
    int reps = 0;
    const auto t0 = Clock::now();
    double elapsed = 0.0;
    while (reps < 2 || elapsed < budget_s / 3.0) {
      body();
      ++reps;
      elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
    }
    best = std::min(best, elapsed / reps);
  }
  return best;
}

// 64-byte aligned floats (the kernels' preference), freed on scope exit.
std::unique_ptr<float, decltype(&std::free)> aligned_floats(size_t n) {
  void* p = std::aligned_alloc(64, (n * sizeof(float) + 63) / 64 * 64);
  if (p) std::memset(p, 0, (n * sizeof(float) + 63) / 64 * 64);
  return {static_cast<float*>(p), &std::free};
}

double measure_gemm_gflops() {
  const size_t m = 192, n = 256, k = 256;  // fits L2: measures the microkernel, not memory
  const kernels::F32GemmConfig& cfg = kernels::f32_gemm_config();
  auto a = aligned_floats(m * k), b = aligned_floats(k * n), c = aligned_floats(m * n);
  auto packed = aligned_floats(kernels::f32_gemm_packed_b_size(k, n, cfg.nr));
  std::vector<uint8_t> workspace(kernels::f32_gemm_workspace_size(cfg, k));
  if (!a || !b || !c || !packed) return 0.0;
  for (size_t i = 0; i < m * k; ++i) a.get()[i] = static_cast<float>(i % 7) * 0.25f;
  for (size_t i = 0; i < k * n; ++i) b.get()[i] = static_cast<float>(i % 5) * 0.5f;
  kernels::f32_gemm_pack_b(cfg, k, n, b.get(), n, 1, packed.get());
  kernels::F32GemmArgs args;
  args.m = m, args.n = n, args.k = k;
  args.a = a.get(), args.a_row_stride = k, args.a_col_stride = 1;
  args.b_packed = packed.get();
  args.c = c.get(), args.c_stride = n;
  const double s = seconds_per_rep(0.6, [&] { kernels::f32_gemm(cfg, args, 0, m, 0, n, workspace.data()); });
  return 2.0 * m * n * k / s / 1e9;
}

double measure_dwconv_gflops() {
  const size_t channels = 32, hw = 56;  // a MobileNet stage: planes stay in L2
  auto in = aligned_floats(channels * hw * hw), out = aligned_floats(channels * hw * hw);
  float w[9] = {0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f, 0.8f, 0.9f};
  if (!in || !out) return 0.0;
  const kernels::F32DwconvFn fn = kernels::f32_dwconv_select(kernels::selected_isa(), 3, 3, 1, 1, 1, 1);
  const double s = seconds_per_rep(0.4, [&] {
    for (size_t c = 0; c < channels; ++c) {
      kernels::F32DwconvParams p;
      p.in = in.get() + c * hw * hw, p.in_stride = hw, p.in_height = hw, p.in_width = hw;
      p.pad_top = 1, p.pad_left = 1, p.w = w;
      p.out = out.get() + c * hw * hw, p.out_stride = hw, p.out_width = hw;
      fn(p, 0, hw);
    }
  });
  return 2.0 * 9.0 * static_cast<double>(channels * hw * hw) / s / 1e9;
}

// Read bandwidth of a buffer of `bytes` streamed over and over (integer sum: vectorises, and
// the result is kept so the loop is not removed).
double measure_read_gbps(size_t bytes, double budget_s) {
  const size_t n = bytes / sizeof(uint64_t);
  std::vector<uint64_t> buf(n, 1);
  volatile uint64_t sink = 0;
  const double s = seconds_per_rep(budget_s, [&] {
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i + 4 <= n; i += 4) s0 += buf[i], s1 += buf[i + 1], s2 += buf[i + 2], s3 += buf[i + 3];
    sink = sink + s0 + s1 + s2 + s3;
  });
  return static_cast<double>(n * sizeof(uint64_t)) / s / 1e9;
}

}  // namespace

BackendProfile DeviceProfile::host() const {
  const std::string fallback = BackendRegistry::global().general_fallback();
  for (const BackendProfile& p : backends)
    if (!fallback.empty() && p.backend == fallback) return p;
  return host_entry_name(default_host());
}

BackendProfile DeviceProfile::for_backend(const std::string& name) const {
  for (const BackendProfile& p : backends)
    if (p.backend == name) return p;
  const BackendProfile h = host();
  auto backend = BackendRegistry::global().create(name);
  if (backend.ok()) return (*backend)->cost_profile(h);
  BackendProfile q = h;
  q.backend = name;
  return q;
}

DeviceProfile default_device_profile() {
  DeviceProfile d;
  d.source = "built-in defaults";
  d.backends = derive_all(host_entry_name(default_host()));
  return d;
}

Result<DeviceProfile> load_device_profile(const std::string& path) {
  std::ifstream f(path);
  if (!f) return unavailable("device profile '" + path + "': cannot open the file");
  std::stringstream text;
  text << f.rdbuf();
  nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return invalid_argument("device profile '" + path + "': not valid JSON");
  if (!j.is_object()) return invalid_argument("device profile '" + path + "': top level must be an object");
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer() || version->get<int>() != kFormatVersion) {
    return invalid_argument("device profile '" + path + "': field 'version' must be " + std::to_string(kFormatVersion));
  }
  auto list = j.find("backends");
  if (list == j.end() || !list->is_array() || list->empty()) {
    return invalid_argument("device profile '" + path + "': field 'backends' must be a non-empty array");
  }
  DeviceProfile d;
  d.source = path;
  for (size_t i = 0; i < list->size(); ++i) {
    NFUSE_ASSIGN_OR_RETURN(BackendProfile p, parse_backend(path, (*list)[i], i));
    d.backends.push_back(std::move(p));
  }
  return d;
}

std::string device_profile_json(const DeviceProfile& profile) {
  nlohmann::json j;
  j["version"] = kFormatVersion;
  j["backends"] = nlohmann::json::array();
  for (const BackendProfile& p : profile.backends) j["backends"].push_back(to_json(p));
  return j.dump(2) + "\n";
}

Status save_device_profile(const DeviceProfile& profile, const std::string& path) {
  std::ofstream f(path);
  if (!f) return unavailable("cannot write device profile '" + path + "'");
  f << device_profile_json(profile);
  if (!f.flush()) return unavailable("cannot write device profile '" + path + "'");
  return ok_status();
}

DeviceProfile measure_device_profile(const std::function<double(const std::string&)>& step_us,
                                     std::vector<ProfileMeasurement>* log) {
  auto note = [&](std::string what, double value, std::string unit) {
    if (log) log->push_back({std::move(what), value, std::move(unit)});
  };
  BackendProfile cpu = host_entry_name(default_host());
  const kernels::CpuFeatures& f = kernels::cpu_features();
  cpu.l2_bytes = static_cast<int64_t>(f.l2_bytes);
  // cpu_features gives each core's share of L3; the profile records the whole cache.
  cpu.l3_bytes = static_cast<int64_t>(f.l3_bytes);
  note("L2 per core (detected)", static_cast<double>(cpu.l2_bytes) / 1024.0, "KiB");
  note("L3 share per core (detected)", static_cast<double>(cpu.l3_bytes) / 1024.0, "KiB");
  cpu.gflops_f32 = measure_gemm_gflops();
  note(std::string("f32 GEMM 192x256x256 (") + kernels::f32_gemm_config().name + ")", cpu.gflops_f32, "GFLOP/s");
  cpu.gflops_f32_depthwise = measure_dwconv_gflops();
  note("f32 depthwise 3x3 32x56x56", cpu.gflops_f32_depthwise, "GFLOP/s");
  // No int8 microbenchmark yet: the integer GEMM does twice the f32 work per instruction.
  cpu.gflops_int8 = 2.0 * cpu.gflops_f32;
  cpu.dram_gbps = measure_read_gbps(size_t{64} << 20, 1.2);
  note("read 64 MiB (DRAM)", cpu.dram_gbps, "GB/s");
  cpu.l2_gbps = measure_read_gbps(size_t{256} << 10, 0.4);
  note("read 256 KiB (L2)", cpu.l2_gbps, "GB/s");
  DeviceProfile d;
  d.source = "measured";
  d.backends = derive_all(cpu);
  if (step_us) {
    for (BackendProfile& p : d.backends) {
      const double us = step_us(p.backend);
      if (us < 0.0) continue;
      p.step_us = us;
      note("per-node dispatch (" + p.backend + ")", us, "us");
    }
  }
  return d;
}

}  // namespace nfuse::backends
