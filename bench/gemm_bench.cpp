// FP32 GEMM micro-benchmark: single-threaded GFLOP/s of the f32-gemm driver per configuration
// (each ISA's kernels and MR variants) on shapes the cpu backend meets.
// Run: build/bench/nfuse_gemm_bench [--benchmark_filter=avx2]
//   3136 x 64 x 64      1x1 conv on a 56x56 map, 64 -> 64 channels (bias + ReLU epilogue)
//   196 x 1024 x 1024   1x1 conv on a 14x14 map, 1024 -> 1024 channels
//   1 x 1000 x 1280     classifier Gemm (batch 1): bound by reading B, not by FMAs
//   3136 x 256 x 64     expand 1x1 conv (ResNet bottleneck)
//   49 x 2048 x 512     7x7 map, wide N
// FLOPs count 2*M*N*K; the "FLOPS" column prints them per second (G = 1e9).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace {

using nfuse::kernels::F32GemmArgs;
using nfuse::kernels::F32GemmConfig;
using nfuse::kernels::Isa;

void bm_gemm(benchmark::State& state, const F32GemmConfig* cfg, size_t m, size_t n, size_t k) {
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> a(m * k), b(k * n), bias(n), c(m * n);
  for (float& x : a) x = dist(rng);
  for (float& x : b) x = dist(rng);
  for (float& x : bias) x = dist(rng);
  std::vector<float> packed(nfuse::kernels::f32_gemm_packed_b_size(k, n, cfg->nr) + 16);
  float* packed_aligned = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(packed.data()) + 63) & ~uintptr_t{63});
  nfuse::kernels::f32_gemm_pack_b(*cfg, k, n, b.data(), n, 1, packed_aligned);
  std::vector<unsigned char> workspace(nfuse::kernels::f32_gemm_workspace_size(*cfg, k));

  F32GemmArgs args;
  args.m = m, args.n = n, args.k = k;
  args.a = a.data(), args.a_row_stride = k, args.a_col_stride = 1;
  args.b_packed = packed_aligned;
  args.c = c.data(), args.c_stride = n;
  args.bias = bias.data();
  args.min = 0.0f;  // ReLU
  for (auto _ : state) {
    nfuse::kernels::f32_gemm(*cfg, args, 0, m, 0, n, workspace.data());
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  state.counters["FLOPS"] = benchmark::Counter(2.0 * static_cast<double>(m * n * k),
                                               benchmark::Counter::kIsIterationInvariantRate,
                                               benchmark::Counter::OneK::kIs1000);
  state.SetLabel(cfg->name);
}

int register_all() {
  const size_t shapes[][3] = {{3136, 64, 64}, {196, 1024, 1024}, {1, 1000, 1280}, {3136, 256, 64}, {49, 2048, 512}};
  for (const F32GemmConfig* cfg : nfuse::kernels::f32_gemm_configs()) {
    for (const auto& s : shapes) {
      const std::string name = std::string("f32_gemm/") + cfg->name + "/M" + std::to_string(s[0]) +
                               "_N" + std::to_string(s[1]) + "_K" + std::to_string(s[2]);
      benchmark::RegisterBenchmark(name.c_str(), bm_gemm, cfg, s[0], s[1], s[2])->Unit(benchmark::kMicrosecond);
    }
  }
  return 0;
}

const int registered = register_all();

}  // namespace

BENCHMARK_MAIN();
