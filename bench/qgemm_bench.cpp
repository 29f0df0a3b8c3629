// Quantized GEMM micro-benchmark, linked into nfuse_gemm_bench (gemm_bench.cpp has main): single-
// threaded GOP/s of the int8 GEMM (qu8-gemm, u8 x s8) and the W8A16 GEMM (qs16-gemm, int16 x s8,
// int64-exact accumulation) per configuration, on the shapes of gemm_bench.cpp, each with
// requantized output. Ops count 2*M*N*K; the "OPS" column prints them per second (G = 1e9).
// Run: build/bench/nfuse_gemm_bench --benchmark_filter=qgemm
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/qs16-gemm/qs16_gemm.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace {

namespace k = nfuse::kernels;

void set_counters(benchmark::State& state, size_t m, size_t n, size_t kk, const char* name) {
  state.counters["OPS"] = benchmark::Counter(2.0 * static_cast<double>(m * n * kk),
                                             benchmark::Counter::kIsIterationInvariantRate,
                                             benchmark::Counter::OneK::kIs1000);
  state.SetLabel(name);
}

void bm_qu8(benchmark::State& state, const k::Qu8GemmConfig* cfg, size_t m, size_t n, size_t kk) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> d(0, 255);
  std::vector<uint8_t> a(m * kk), c(m * n);
  std::vector<int8_t> b(kk * n);
  for (auto& x : a) x = static_cast<uint8_t>(d(rng));
  for (auto& x : b) x = static_cast<int8_t>(d(rng) - 128);
  std::vector<float> mult(n, 1e-4f);
  std::vector<uint8_t> packed(k::qu8_gemm_packed_b_size(*cfg, kk, n));
  k::qu8_gemm_pack_b(*cfg, kk, n, b.data(), n, 1, nullptr, mult.data(), 128, false, packed.data());
  std::vector<uint8_t> ws(k::qu8_gemm_workspace_size(*cfg, kk));
  k::Qu8GemmArgs args;
  args.m = m, args.n = n, args.k = kk;
  args.a = a.data(), args.a_row_stride = kk;
  args.b_packed = packed.data();
  args.c = c.data(), args.c_stride = n, args.c_zero_point = 128;
  for (auto _ : state) {
    k::qu8_gemm(*cfg, args, 0, m, 0, n, ws.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, m, n, kk, cfg->name);
}

void bm_qs16(benchmark::State& state, const k::Qs16GemmConfig* cfg, size_t m, size_t n, size_t kk) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> d(0, 65535);
  std::vector<uint16_t> a(m * kk), c(m * n);
  std::vector<int8_t> b(kk * n);
  for (auto& x : a) x = static_cast<uint16_t>(d(rng));
  for (auto& x : b) x = static_cast<int8_t>(d(rng) % 256 - 128);
  std::vector<float> mult(n, 1e-6f);
  std::vector<uint8_t> packed(k::qs16_gemm_packed_b_size(*cfg, kk, n));
  k::qs16_gemm_pack_b(*cfg, kk, n, b.data(), n, 1, nullptr, mult.data(), 0, false, packed.data());
  std::vector<uint8_t> ws(k::qs16_gemm_workspace_size(*cfg, kk));
  k::Qs16GemmArgs args;
  args.m = m, args.n = n, args.k = kk;
  args.a = a.data(), args.a_row_stride = kk;
  args.b_packed = packed.data();
  args.c = c.data(), args.c_stride = n;
  for (auto _ : state) {
    k::qs16_gemm(*cfg, args, 0, m, 0, n, ws.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  set_counters(state, m, n, kk, cfg->name);
}

std::string shape_name(const size_t* s) {
  return "/M" + std::to_string(s[0]) + "_N" + std::to_string(s[1]) + "_K" + std::to_string(s[2]);
}

int register_all() {
  const size_t shapes[][3] = {{3136, 64, 64}, {196, 1024, 1024}, {1, 1000, 1280}, {3136, 256, 64},
                              {49, 2048, 512}, {3136, 64, 576}};
  for (const auto& s : shapes) {
    for (const k::Qu8GemmConfig* cfg : k::qu8_gemm_configs()) {
      benchmark::RegisterBenchmark(("qgemm/qu8/" + std::string(cfg->name) + shape_name(s)).c_str(), bm_qu8, cfg, s[0],
                                   s[1], s[2])->Unit(benchmark::kMicrosecond);
    }
    for (const k::Qs16GemmConfig* cfg : k::qs16_gemm_configs()) {
      benchmark::RegisterBenchmark(("qgemm/qs16/" + std::string(cfg->name) + shape_name(s)).c_str(), bm_qs16, cfg,
                                   s[0], s[1], s[2])->Unit(benchmark::kMicrosecond);
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace
