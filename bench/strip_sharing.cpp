// Why two threads scale poorly on NCHW activations (bench/RESULTS.md, 2026-12-07): a 1x1 conv
// pair, 96 -> 576 (the producer) then 576 -> 96 (the consumer), on an HxW map with the f32 GEMM
// microkernel reading the activation in place, as cpu_conv.cpp's W * X path does. Prints the
// consumer's time per half of the work under five ways of sharing it between two CPUs:
//   one thread       one CPU computes both halves of both convs (the reference);
//   pixel halves     each thread the same half of the pixels in both convs, one NCHW tensor
//                    (every row of every channel holds both threads' pixels);
//   taking turns     the same, the two consumer halves one after the other;
//   channel halves   each thread half the output channels, reading every input channel;
//   own tensors      pixel halves, each half in a tensor of its own (no memory shared).
// Threads are pinned to the first two CPUs this process may use.
//   nfuse_strip_sharing [HW] [ITERATIONS]
#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "kernels/f32-gemm/f32_gemm.h"

namespace {

using nfuse::kernels::F32GemmConfig;
constexpr size_t kKc = 192;

struct Conv1x1 {
  size_t m = 0, k = 0;
  std::vector<float> packed;  // MR-row panels of the m x k weights
};

Conv1x1 make_conv(const F32GemmConfig& cfg, size_t m, size_t k) {
  Conv1x1 c{m, k, {}};
  std::vector<float> w(m * k);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>((i * 7919) % 1000) / 1000.0f - 0.5f;
  const size_t panels = (m + cfg.mr - 1) / cfg.mr;
  c.packed.assign(panels * cfg.mr * k, 0.0f);
  for (size_t p = 0; p < panels; ++p)
    nfuse::kernels::f32_gemm_pack_a(cfg.mr, std::min(cfg.mr, m - p * cfg.mr), k, w.data() + p * cfg.mr * k, k, 1,
                                    c.packed.data() + p * cfg.mr * k);
  return c;
}

// out rows [m0, m1), pixels [p0, p0 + np) of an activation whose channel planes hold `stride`
// floats; full NR panels are read in place, the rest packed into `ws` (kKc x NR floats).
void conv(const F32GemmConfig& cfg, const Conv1x1& c, const float* in, float* out, size_t stride, size_t m0, size_t m1,
          size_t p0, size_t np, float* ws) {
  const size_t nr = cfg.nr, full = np / nr, panels = (np + nr - 1) / nr;
  nfuse::kernels::F32GemmEpilogue ep;
  for (size_t k0 = 0; k0 < c.k; k0 += kKc) {
    const size_t kc = std::min(kKc, c.k - k0);
    if (full < panels) {
      const size_t q0 = full * nr, w = np - q0;
      for (size_t k = 0; k < kc; ++k) {
        std::memcpy(ws + k * nr, in + (k0 + k) * stride + p0 + q0, w * sizeof(float));
        std::memset(ws + k * nr + w, 0, (nr - w) * sizeof(float));
      }
    }
    const uint32_t flags =
        (k0 > 0 ? nfuse::kernels::kF32GemmLoadC : 0u) | (k0 + kc >= c.k ? nfuse::kernels::kF32GemmFinal : 0u);
    for (size_t mp = m0; mp < m1; mp += cfg.mr) {
      const float* a = c.packed.data() + (mp / cfg.mr) * cfg.mr * c.k + k0 * cfg.mr;
      for (size_t pn = 0; pn < panels; ++pn) {
        const bool direct = pn < full;
        const float* b = direct ? in + k0 * stride + p0 + pn * nr : ws;
        cfg.ukernel(std::min(cfg.mr, m1 - mp), std::min(nr, np - pn * nr), kc, a, b, direct ? stride : nr,
                    out + mp * stride + p0 + pn * nr, stride, flags, ep);
      }
    }
  }
}

// A spinning wait's pause: a sched_yield per poll is a system call, which slowed the other CPU's
// half by half again here.
inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

struct SpinBarrier {
  std::atomic<int> arrived{0}, generation{0};
  void wait() {
    const int g = generation.load();
    if (arrived.fetch_add(1) + 1 == 2) {
      arrived.store(0);
      generation.fetch_add(1);
    } else {
      while (generation.load() == g) relax();
    }
  }
};

void pin(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  (void)pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

}  // namespace

int main(int argc, char** argv) {
  const size_t hw = argc > 1 ? static_cast<size_t>(std::atoi(argv[1])) : 14;
  const int iterations = argc > 2 ? std::atoi(argv[2]) : 2000;
  if (hw < 8 || hw > 64 || iterations < 10) {  // from 8x8 each half holds a whole NR panel
    std::fprintf(stderr, "usage: nfuse_strip_sharing [HW 8-64] [ITERATIONS >= 10]\n");
    return 2;
  }
  cpu_set_t mine;
  CPU_ZERO(&mine);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof mine, &mine) == 0)
    for (int c = 0; c < CPU_SETSIZE && cpus.size() < 2; ++c)
      if (CPU_ISSET(c, &mine)) cpus.push_back(c);
  if (cpus.size() < 2) {
    std::printf("nfuse_strip_sharing: needs two CPUs, this process may use %zu\n", cpus.size());
    return 0;
  }
  const F32GemmConfig& cfg = nfuse::kernels::f32_gemm_config();
  const size_t p = hw * hw, half_p = p / 2 / cfg.nr * cfg.nr;
  const size_t pix[2][2] = {{0, half_p}, {half_p, p - half_p}};  // first pixel, pixels
  const Conv1x1 expand = make_conv(cfg, 576, 96), project = make_conv(cfg, 96, 576);
  std::vector<float> x(96 * p, 0.5f), mid(576 * p), y(96 * p);
  std::vector<float> own_x[2], own_mid[2], own_y[2];
  for (int t = 0; t < 2; ++t) {
    own_x[t].assign(96 * pix[t][1], 0.5f);
    own_mid[t].assign(576 * pix[t][1], 0.0f);
    own_y[t].assign(96 * pix[t][1], 0.0f);
  }
  using Clock = std::chrono::steady_clock;
  // One half of the producer and then of the consumer for thread t; returns the consumer's us.
  using Step = std::function<double(int t, std::vector<float>& ws, bool consumer)>;
  auto pixel_half = [&](int t, std::vector<float>& ws, bool consumer) {
    const auto t0 = Clock::now();
    if (consumer)
      conv(cfg, project, mid.data(), y.data(), p, 0, 96, pix[t][0], pix[t][1], ws.data());
    else
      conv(cfg, expand, x.data(), mid.data(), p, 0, 576, pix[t][0], pix[t][1], ws.data());
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  auto channel_half = [&](int t, std::vector<float>& ws, bool consumer) {
    const auto t0 = Clock::now();
    if (consumer)
      conv(cfg, project, mid.data(), y.data(), p, t * 48, t * 48 + 48, 0, p, ws.data());
    else
      conv(cfg, expand, x.data(), mid.data(), p, t * 288, t * 288 + 288, 0, p, ws.data());
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  auto own_half = [&](int t, std::vector<float>& ws, bool consumer) {
    const size_t n = pix[t][1];
    const auto t0 = Clock::now();
    if (consumer)
      conv(cfg, project, own_mid[t].data(), own_y[t].data(), n, 0, 96, 0, n, ws.data());
    else
      conv(cfg, expand, own_x[t].data(), own_mid[t].data(), n, 0, 576, 0, n, ws.data());
    return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
  };
  // Mean consumer us per half: threads 1 or 2; `turns` runs the two consumer halves in turn.
  auto measure = [&](const Step& step, int threads, bool turns) {
    double sum[2] = {0, 0};
    SpinBarrier barrier;
    std::atomic<int> turn{0};
    auto body = [&](int t) {
      pin(cpus[static_cast<size_t>(t)]);
      std::vector<float> ws(kKc * cfg.nr);
      for (int it = 0; it < iterations; ++it) {
        for (int h = 0; h < 2; ++h)
          if (threads == 1 || h == t) step(h, ws, false);
        if (threads == 2) barrier.wait();
        for (int h = 0; h < 2; ++h) {
          if (threads == 2 && h != t) continue;
          if (turns)
            while (turn.load() != h) relax();
          const double us = step(h, ws, true);
          if (turns) turn.store(1 - h);
          if (it >= iterations / 10) sum[h] += us;
        }
        if (threads == 2) barrier.wait();
        if (turns && t == 0) turn.store(0);
        if (threads == 2) barrier.wait();
      }
    };
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t) pool.emplace_back(body, t);
    for (std::thread& th : pool) th.join();
    const double n = iterations - iterations / 10;
    return std::make_pair(sum[0] / n, sum[1] / n);
  };
  std::printf("nfuse_strip_sharing: %zux%zu map, 96 -> 576 -> 96 channels, kernel %s, CPUs %d and %d\n", hw, hw,
              cfg.name, cpus[0], cpus[1]);
  std::printf("%-16s %14s %14s\n", "sharing", "half 0 us", "half 1 us");
  const struct {
    const char* name;
    Step step;
    int threads;
    bool turns;
  } rows[] = {{"one thread", pixel_half, 1, false},
              {"pixel halves", pixel_half, 2, false},
              {"taking turns", pixel_half, 2, true},
              {"channel halves", channel_half, 2, false},
              {"own tensors", own_half, 2, false}};
  for (const auto& r : rows) {
    const auto [h0, h1] = measure(r.step, r.threads, r.turns);
    std::printf("%-16s %14.1f %14.1f\n", r.name, h0, h1);
  }
  return 0;
}
