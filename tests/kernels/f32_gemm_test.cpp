// FP32 GEMM kernel family (src/kernels/f32-gemm) against a triple loop in double, on every ISA
// variant this machine runs (scalar always): microkernel tiles with every mr/nc edge and flag
// combination, the driver over tile-derived shapes with every epilogue, A layouts and leading
// dimensions wider than the data, tiny cache blocks to exercise block edges, and task splits.
// Guard values after and between output rows catch writes outside C.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu_features.h"
#include "kernels/f32-gemm/f32_gemm.h"
#include "kernels/gemm_tasks.h"
#include "support/tolerances_kernels.h"

namespace nfuse::kernels {
namespace {

constexpr uint32_t kSeed = 20240611;
constexpr float kGuard = -7.75e33f;  // never produced by the data below
constexpr size_t kGuardCount = 67;
constexpr float kInf = std::numeric_limits<float>::infinity();

// Every configuration this CPU runs: each ISA's primary and its MR variants.
std::vector<const F32GemmConfig*> available_configs() { return f32_gemm_configs(); }

void fill(std::vector<float>& v, std::mt19937& rng) {
  std::uniform_real_distribution<float> d(-1.0f, 1.0f);
  for (float& x : v) {
    x = d(rng);
  }
}

enum class ALayout { kRowMajor, kColMajor, kStrided };

struct Case {
  size_t m = 1, n = 1, k = 1;
  ALayout layout = ALayout::kRowMajor;
  size_t a_pad = 0;  // extra elements per A row (row-major) or column (column-major)
  size_t b_pad = 0;  // extra elements per B row; transposed source when b_transposed
  bool b_transposed = false;
  size_t c_pad = 0;  // c_stride = n + c_pad
  bool bias = false;
  enum { kNone, kSeparate, kAliasC } residual = kNone;
  float min = -kInf, max = kInf;
  size_t threads = 1;  // tasks from f32_gemm_tasks, run one after another
  bool prepacked_a = false;  // A handed over in the driver's layout (F32GemmArgs::a_packed), `a` null
};

std::string describe(const F32GemmConfig& cfg, const Case& c) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "%s seed=%u M=%zu N=%zu K=%zu layout=%d a_pad=%zu b_pad=%zu b_t=%d c_pad=%zu bias=%d residual=%d "
                "min=%g max=%g threads=%zu kc=%zu mc=%zu nc=%zu",
                cfg.name, kSeed, c.m, c.n, c.k, static_cast<int>(c.layout), c.a_pad, c.b_pad,
                static_cast<int>(c.b_transposed), c.c_pad, static_cast<int>(c.bias), static_cast<int>(c.residual),
                static_cast<double>(c.min), static_cast<double>(c.max), c.threads, cfg.kc, cfg.mc, cfg.nc);
  return buf;
}

// Runs one driver case and compares with the double reference; reports the first mismatch only.
void run_case(const F32GemmConfig& cfg, const Case& c, std::mt19937& rng) {
  SCOPED_TRACE(describe(cfg, c));
  const size_t m = c.m, n = c.n, k = c.k;

  // A, in the requested layout.
  size_t a_rs = 0, a_cs = 0, a_size = 0;
  switch (c.layout) {
    case ALayout::kRowMajor:
      a_rs = k + c.a_pad, a_cs = 1, a_size = m * a_rs;
      break;
    case ALayout::kColMajor:
      a_rs = 1, a_cs = m + c.a_pad, a_size = k * a_cs;
      break;
    case ALayout::kStrided:
      a_rs = 2 * k + 1, a_cs = 2, a_size = m * a_rs;
      break;
  }
  std::vector<float> a(a_size + 1);
  fill(a, rng);

  // B (K x N), row-major or transposed ([N][K], as conv weights), then packed with a guard.
  const size_t b_ld = (c.b_transposed ? k : n) + c.b_pad;
  std::vector<float> b((c.b_transposed ? n : k) * b_ld + 1);
  fill(b, rng);
  const size_t b_ks = c.b_transposed ? 1 : b_ld;
  const size_t b_ns = c.b_transposed ? b_ld : 1;
  const size_t packed_size = f32_gemm_packed_b_size(k, n, cfg.nr);
  std::vector<float> packed(packed_size + kGuardCount, kGuard);
  f32_gemm_pack_b(cfg, k, n, b.data(), b_ks, b_ns, packed.data());
  for (size_t i = packed_size; i < packed.size(); ++i) {
    ASSERT_EQ(packed[i], kGuard) << "pack_b wrote past its size at " << i;
  }

  std::vector<float> bias(n);
  fill(bias, rng);

  // C with guards between rows (c_pad) and after the end.
  const size_t c_stride = n + c.c_pad;
  const size_t c_size = (m - 1) * c_stride + n;
  std::vector<float> cbuf(c_size + kGuardCount, kGuard);
  std::vector<float> residual;
  size_t r_stride = 0;
  if (c.residual == Case::kSeparate) {
    r_stride = n + 3;
    residual.resize(m * r_stride);
    fill(residual, rng);
  } else if (c.residual == Case::kAliasC) {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (size_t i = 0; i < m; ++i) {
      for (size_t j = 0; j < n; ++j) {
        cbuf[i * c_stride + j] = d(rng);
      }
    }
    residual.assign(cbuf.begin(), cbuf.end());  // the reference's copy of the initial C
    r_stride = c_stride;
  }

  // Reference, in double.
  std::vector<double> ref(m * n);
  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < n; ++j) {
      double s = c.bias ? bias[j] : 0.0;
      for (size_t kk = 0; kk < k; ++kk) {
        s += static_cast<double>(a[i * a_rs + kk * a_cs]) * static_cast<double>(b[kk * b_ks + j * b_ns]);
      }
      if (c.residual != Case::kNone) {
        s += residual[i * r_stride + j];
      }
      s = s < c.min ? c.min : s;
      s = s > c.max ? c.max : s;
      ref[i * n + j] = s;
    }
  }

  F32GemmArgs args;
  args.m = m, args.n = n, args.k = k;
  args.a = a.data(), args.a_row_stride = a_rs, args.a_col_stride = a_cs;
  args.b_packed = packed.data();
  args.c = cbuf.data(), args.c_stride = c_stride;
  args.bias = c.bias ? bias.data() : nullptr;
  if (c.residual == Case::kSeparate) {
    args.residual = residual.data(), args.residual_stride = r_stride;
  } else if (c.residual == Case::kAliasC) {
    args.residual = cbuf.data(), args.residual_stride = c_stride;
  }
  args.min = c.min, args.max = c.max;
  std::vector<float> a_packed;
  if (c.prepacked_a) {  // the layout F32GemmArgs::a_packed documents, built from its parts
    ASSERT_LE(m, cfg.mc);
    a_packed.assign(m * k + 1, kGuard);
    const size_t full = m / cfg.mr * cfg.mr;
    for (size_t k0 = 0; k0 < k; k0 += cfg.kc) {
      const size_t kb = std::min(cfg.kc, k - k0);
      for (size_t i = 0; i < full; i += cfg.mr)
        f32_gemm_pack_a(cfg.mr, cfg.mr, kb, a.data() + i * a_rs + k0 * a_cs, a_rs, a_cs, &a_packed[k0 * m + i * kb]);
      for (size_t i = full; i < m; ++i)
        f32_gemm_pack_a(1, 1, kb, a.data() + i * a_rs + k0 * a_cs, a_rs, a_cs, &a_packed[k0 * m + i * kb]);
    }
    ASSERT_EQ(a_packed[m * k], kGuard);
    args.a_packed = a_packed.data();
    args.a = nullptr;
  }

  const size_t ws_size = f32_gemm_workspace_size(cfg, k);
  std::vector<unsigned char> ws(ws_size + kGuardCount, 0xA5);
  const F32GemmTasks tasks = f32_gemm_tasks(cfg, m, n, k, c.threads);
  ASSERT_GE(tasks.count(), 1u);
  ASSERT_GE(tasks.m_step * tasks.m_count, m);
  ASSERT_GE(tasks.n_step * tasks.n_count, n);
  ASSERT_EQ(tasks.n_step % cfg.nr, 0u);
  for (size_t t = 0; t < tasks.count(); ++t) {
    f32_gemm_task(cfg, args, tasks, t, ws.data());
  }
  for (size_t i = ws_size; i < ws.size(); ++i) {
    ASSERT_EQ(ws[i], 0xA5) << "workspace overrun at byte " << i << " of " << ws_size;
  }

  for (size_t i = 0; i < m; ++i) {
    for (size_t j = 0; j < c_stride && i * c_stride + j < c_size; ++j) {
      const float y = cbuf[i * c_stride + j];
      if (j >= n) {
        ASSERT_EQ(y, kGuard) << "write between rows at row " << i << " column " << j;
        continue;
      }
      const double r = ref[i * n + j];
      ASSERT_LE(std::fabs(y - r), test::f32_gemm_tol(r, k)) << "first mismatch at C[" << i << "][" << j << "]";
    }
  }
  for (size_t i = c_size; i < cbuf.size(); ++i) {
    ASSERT_EQ(cbuf[i], kGuard) << "write past the end of C at " << i - c_size;
  }
}

class F32GemmTest : public ::testing::TestWithParam<const F32GemmConfig*> {
 protected:
  static void SetUpTestSuite() { std::printf("f32_gemm_test: seed %u\n", kSeed); }
  const F32GemmConfig& cfg() const { return *GetParam(); }
};

TEST_P(F32GemmTest, ConfigIsConsistent) {
  const F32GemmConfig& c = cfg();
  const F32GemmConfig* primary = f32_gemm_config(c.isa);
  ASSERT_NE(primary, nullptr);
  EXPECT_EQ(c.nr, primary->nr);  // variants share the primary's B layout
  EXPECT_NE(c.ukernel, nullptr);
  EXPECT_NE(c.ukernel_1, nullptr);
  EXPECT_GT(c.mr, 0u);
  EXPECT_GT(c.nr, 0u);
  EXPECT_GE(c.kc, 8u);
  EXPECT_EQ(c.mc % c.mr, 0u);
  EXPECT_EQ(c.nc % c.nr, 0u);
  // Forcing an ISA changes what production callers get; the row-count choice stays in the ISA
  // and never pads more than the primary.
  ScopedIsaOverride force(c.isa);
  EXPECT_EQ(&f32_gemm_config(), primary);
  for (size_t m = 1; m < 100; ++m) {
    const F32GemmConfig& r = f32_gemm_config_for_rows(m);
    EXPECT_EQ(r.isa, c.isa);
    EXPECT_LE((m + r.mr - 1) / r.mr * r.mr, (m + primary->mr - 1) / primary->mr * primary->mr) << m;
  }
  // Where the ISA has a narrower variant: it takes row counts the primary would pad by an eighth
  // or more, the primary takes the ones it pads by a few percent (its faster rows win).
  // With many columns (FMA-bound) it takes row counts the primary would pad by an eighth or more,
  // the primary the ones it pads by a few percent (its faster rows win); with few or unknown
  // columns the fewest padded rows win.
  if (primary->mr == 12 && &f32_gemm_config_for_rows(16) != primary) {
    const size_t many = 4 * primary->nr, few = primary->nr;
    for (size_t m : {16, 32, 64}) {
      EXPECT_EQ(f32_gemm_config_for_rows(m, many).mr, 8u) << m;
      EXPECT_EQ(f32_gemm_config_for_rows(m, few).mr, 8u) << m;
    }
    for (size_t m : {24, 128, 256, 512, 1024, 2048}) EXPECT_EQ(&f32_gemm_config_for_rows(m, many), primary) << m;
    for (size_t m : {128, 256, 512, 1024, 2048}) {
      EXPECT_EQ(f32_gemm_config_for_rows(m, few).mr, 8u) << m;
      EXPECT_EQ(f32_gemm_config_for_rows(m).mr, 8u) << m;
    }
  }
}

// Microkernels alone: every mr (1..MR) x nc (1..NR) edge with each flag and epilogue, checking
// that nothing outside the mr x nc tile is touched.
TEST_P(F32GemmTest, MicrokernelTiles) {
  const F32GemmConfig& c = cfg();
  std::mt19937 rng(kSeed);
  for (const bool tail_kernel : {false, true}) {
    const size_t kmr = tail_kernel ? 1 : c.mr;
    const F32GemmUkernelFn ukernel = tail_kernel ? c.ukernel_1 : c.ukernel;
    for (size_t kc : {0, 1, 3, 4, 9, 33}) {
      // B rows NR apart (a packed panel) and further apart (an unpacked matrix, e.g. NCHW
      // activations read in place); the bytes between rows hold guards the kernel must ignore.
      for (size_t b_stride : {c.nr, c.nr + 5}) {
      for (size_t mr = 1; mr <= kmr; ++mr) {
        for (size_t nc = 1; nc <= c.nr; ++nc) {
          for (uint32_t flags = 0; flags < 4; ++flags) {
            SCOPED_TRACE(testing::Message() << c.name << (tail_kernel ? " 1-row" : "") << " seed=" << kSeed
                                            << " kc=" << kc << " b_stride=" << b_stride << " mr=" << mr
                                            << " nc=" << nc << " flags=" << flags);
            std::vector<float> a(kc * kmr + 1), b(kc * b_stride + 1), bias(c.nr), res(kmr * (c.nr + 2));
            fill(a, rng), fill(b, rng), fill(bias, rng), fill(res, rng);
            for (size_t kk = 0; kk < kc; ++kk) {  // packed layout: padding rows and columns are zero
              for (size_t r = mr; r < kmr; ++r) a[kk * kmr + r] = 0.0f;
              for (size_t j = nc; j < c.nr; ++j) b[kk * b_stride + j] = 0.0f;
              for (size_t j = c.nr; j < b_stride; ++j) b[kk * b_stride + j] = kGuard;
            }
            const size_t c_stride = c.nr + 5;
            std::vector<float> out(kmr * c_stride + kGuardCount, kGuard);
            std::vector<float> init(out.size());
            for (size_t r = 0; r < mr; ++r) {
              for (size_t j = 0; j < nc; ++j) out[r * c_stride + j] = std::ldexp(static_cast<float>(r * 31 + j), -4);
            }
            init = out;
            F32GemmEpilogue ep;
            ep.bias = bias.data();
            std::vector<float> row_bias(kmr);
            fill(row_bias, rng);
            const bool use_row_bias = (mr + nc) % 2 == 0;  // half the tiles: per-row bias on top
            ep.row_bias = use_row_bias ? row_bias.data() : nullptr;
            ep.residual = res.data();
            ep.residual_stride = c.nr + 2;
            ep.min = -0.75f;
            ep.max = 1.5f;
            ukernel(mr, nc, kc, a.data(), b.data(), b_stride, out.data(), c_stride, flags, ep);
            for (size_t r = 0; r < kmr; ++r) {
              for (size_t j = 0; j < c_stride; ++j) {
                const float y = out[r * c_stride + j];
                if (r >= mr || j >= nc) {
                  ASSERT_EQ(y, kGuard) << "wrote outside the tile at [" << r << "][" << j << "]";
                  continue;
                }
                double s = (flags & kF32GemmLoadC)
                               ? init[r * c_stride + j]
                               : static_cast<double>(bias[j]) + res[r * ep.residual_stride + j] +
                                     (use_row_bias ? row_bias[r] : 0.0f);
                for (size_t kk = 0; kk < kc; ++kk) {
                  s += static_cast<double>(a[kk * kmr + r]) * b[kk * b_stride + j];
                }
                if (flags & kF32GemmFinal) {
                  s = s < ep.min ? ep.min : (s > ep.max ? ep.max : s);
                }
                ASSERT_LE(std::fabs(y - s), test::f32_gemm_tol(s, kc)) << "first mismatch at [" << r << "][" << j << "]";
              }
            }
            for (size_t i = kmr * c_stride; i < out.size(); ++i) {
              ASSERT_EQ(out[i], kGuard) << "wrote past the tile buffer";
            }
          }
        }
      }
      }
    }
  }
}

// The driver over tile-derived shapes; epilogue, A layout and padding rotate through the grid so
// that each kind meets every size class.
TEST_P(F32GemmTest, DriverShapes) {
  const F32GemmConfig& c = cfg();
  std::mt19937 rng(kSeed);
  const size_t mr = c.mr, nr = c.nr;
  const size_t ms[] = {1, mr - 1 > 0 ? mr - 1 : 1, mr, mr + 1, 2 * mr, 4 * mr + 3, 127};
  const size_t ns[] = {1, nr - 1, nr, nr + 1, 2 * nr + 3, 257};
  const size_t ks[] = {1, 2, 7, 8, 9, 64, 255, 1000};
  size_t combo = 0;
  for (size_t m : ms) {
    for (size_t n : ns) {
      for (size_t k : ks) {
        Case cs;
        cs.m = m, cs.n = n, cs.k = k;
        cs.layout = static_cast<ALayout>(combo % 3);
        cs.a_pad = combo % 2 ? 3 : 0;
        cs.b_pad = combo % 5 == 1 ? 2 : 0;
        cs.b_transposed = combo % 4 == 3;
        cs.c_pad = combo % 2 ? 0 : 5;
        switch (combo % 6) {
          case 0:
            break;
          case 1:
            cs.bias = true;
            break;
          case 2:
            cs.bias = true, cs.min = 0.0f;  // ReLU
            break;
          case 3:
            cs.bias = true, cs.residual = Case::kSeparate, cs.min = 0.0f, cs.max = 6.0f;  // ReLU6
            break;
          case 4:
            cs.residual = Case::kAliasC;  // C += A*B
            break;
          case 5:
            cs.bias = true, cs.residual = Case::kSeparate, cs.min = -0.5f, cs.max = 0.5f;
            break;
        }
        ++combo;
        run_case(c, cs, rng);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Every epilogue on each A layout, at a shape with all three kinds of edge.
TEST_P(F32GemmTest, DriverEpiloguesAndLayouts) {
  const F32GemmConfig& c = cfg();
  std::mt19937 rng(kSeed + 1);
  for (int layout = 0; layout < 3; ++layout) {
    for (int variant = 0; variant < 8; ++variant) {
      Case cs;
      cs.m = 3 * c.mr + 2, cs.n = 2 * c.nr + 5, cs.k = 37;
      cs.layout = static_cast<ALayout>(layout);
      cs.a_pad = 2, cs.c_pad = 3;
      cs.b_transposed = variant % 2 == 1;
      cs.bias = variant & 2;
      cs.residual = variant & 4 ? Case::kSeparate : Case::kAliasC;
      if (variant == 0) cs.residual = Case::kNone;
      cs.min = variant & 1 ? 0.0f : -kInf;
      cs.max = variant & 2 ? 6.0f : kInf;
      run_case(c, cs, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// Tiny cache blocks so that M, N and K each span several blocks with ragged ends, and K = 0.
TEST_P(F32GemmTest, DriverBlockEdges) {
  F32GemmConfig c = cfg();
  c.kc = 16;
  c.mc = 2 * c.mr;
  c.nc = 2 * c.nr;
  std::mt19937 rng(kSeed + 2);
  const size_t shapes[][3] = {{5 * c.mr + 1, 5 * c.nr + 3, 50}, {2 * c.mr, 2 * c.nr, 32}, {2 * c.mr - 1, c.nr + 1, 17},
                              {1, 3 * c.nr + 1, 47},           {c.mr + 1, 1, 16},            {7, 9, 0}};
  int variant = 0;
  for (const auto& s : shapes) {
    Case cs;
    cs.m = s[0], cs.n = s[1], cs.k = s[2];
    cs.bias = true;
    cs.residual = variant % 2 ? Case::kAliasC : Case::kSeparate;
    cs.min = 0.0f, cs.max = variant % 3 ? 6.0f : kInf;
    cs.layout = static_cast<ALayout>(variant % 3);
    ++variant;
    run_case(c, cs, rng);
    if (HasFatalFailure()) return;
  }
}

// Splitting work into tasks (as threads would) must give the same C, each task its own part.
TEST_P(F32GemmTest, TaskSplits) {
  const F32GemmConfig& c = cfg();
  std::mt19937 rng(kSeed + 3);
  const size_t shapes[][3] = {{127, 257, 64}, {3136 / 16, 64, 64}, {1, 1000, 128}, {2 * c.mr + 1, 3 * c.nr, 300}};
  for (const auto& s : shapes) {
    for (size_t threads : {2, 3, 8}) {
      Case cs;
      cs.m = s[0], cs.n = s[1], cs.k = s[2];
      cs.bias = true, cs.residual = Case::kSeparate, cs.min = 0.0f;
      cs.threads = threads;
      run_case(c, cs, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// The same splits with A handed over already packed (what an im2col writing straight into the
// driver's layout gives it): every task finds its rows' panels and the last rows where the
// whole matrix's are, over one and several K blocks.
TEST_P(F32GemmTest, TaskSplitsOnPrepackedA) {
  const F32GemmConfig& c = cfg();
  std::mt19937 rng(kSeed + 4);
  const size_t shapes[][3] = {{49, 512, 2 * c.kc + 7}, {35, 100, 180}, {2 * c.mr + 5, 3 * c.nr, 300}, {1, 64, 9}};
  for (const auto& s : shapes) {
    for (size_t threads : {1, 2, 3, 8}) {
      Case cs;
      cs.m = s[0], cs.n = s[1], cs.k = s[2];
      cs.layout = ALayout::kColMajor;
      cs.bias = true, cs.min = 0.0f;
      cs.threads = threads;
      cs.prepacked_a = true;
      run_case(c, cs, rng);
      if (HasFatalFailure()) return;
    }
  }
}

// A task split covers the output exactly and keeps N boundaries on panel edges.
TEST_P(F32GemmTest, TaskGrid) {
  const F32GemmConfig& c = cfg();
  for (size_t m : {1, 7, 196, 3136}) {
    for (size_t n : {1, 64, 1000}) {
      for (size_t threads : {1, 2, 4, 16}) {
        const F32GemmTasks t = f32_gemm_tasks(c, m, n, 256, threads);
        SCOPED_TRACE(testing::Message() << "M=" << m << " N=" << n << " threads=" << threads);
        EXPECT_GE(t.count(), 1u);
        if (threads == 1) {
          EXPECT_EQ(t.count(), 1u);
        }
        EXPECT_EQ(t.n_step % c.nr, 0u);
        EXPECT_GE(t.m_step * t.m_count, m);
        EXPECT_LT(t.m_step * (t.m_count - 1), m);  // no empty tasks
        EXPECT_GE(t.n_step * t.n_count, n);
        EXPECT_LT(t.n_step * (t.n_count - 1), n);
      }
    }
  }
}

// Few rows against a large B (a 7x7 map as pixel rows: 49 x 512, K = 4608) split N only, so that
// B is read once in all, not once per row tile; many rows split M only (B shared). Either way
// the tasks are enough for the threads.
TEST_P(F32GemmTest, TaskSplitReadsTheLargeOperandOnce) {
  const F32GemmConfig& c = cfg();
  for (size_t threads : {2, 4}) {
    SCOPED_TRACE(testing::Message() << "threads=" << threads);
    const size_t few_rows = c.mr * 4 + 1;  // 5 row tiles, fewer than 4 tasks per thread
    const F32GemmTasks narrow = f32_gemm_tasks(c, few_rows, 512, 4608, threads);
    EXPECT_EQ(narrow.m_count, 1u);
    EXPECT_GE(narrow.count(), threads);
    const F32GemmTasks tall = f32_gemm_tasks(c, c.mr * threads * 8, 2 * c.nr, 576, threads);
    EXPECT_EQ(tall.n_count, 1u);
    EXPECT_GE(tall.count(), threads);
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, F32GemmTest, ::testing::ValuesIn(available_configs()),
                         [](const ::testing::TestParamInfo<const F32GemmConfig*>& info) {
                           return std::string(info.param->name);
                         });

// kRowsFirst (the int8 and int16 families' split) is the rule they were tuned with: M first,
// a row tile per M range when there are fewer row tiles than tasks, N split for the rest.
TEST(GemmTasks, RowsFirstKeepsTheRowTilePerRangeRule) {
  auto div_up = [](size_t x, size_t y) { return (x + y - 1) / y; };
  for (size_t mr : {1, 4, 12}) {
    for (size_t nr : {8, 16, 32}) {
      for (size_t m : {0, 1, 7, 49, 100, 196, 3136}) {
        for (size_t n : {0, 1, 64, 512, 1000}) {
          for (size_t k : {0, 9, 4608}) {
            for (size_t threads : {1, 2, 3, 8}) {
              SCOPED_TRACE(testing::Message() << "mr " << mr << " nr " << nr << " m " << m << " n " << n << " k " << k
                                              << " threads " << threads);
              const size_t m_tiles = div_up(m > 0 ? m : 1, mr), n_tiles = div_up(n > 0 ? n : 1, nr);
              const size_t max_tasks = m * n * (k > 0 ? k : 1) / (size_t{1} << 16) + 1;
              const size_t target = std::min(threads > 1 ? threads * 4 : 1, max_tasks);
              const size_t m_count = std::min(target, m_tiles);
              const size_t n_count = std::min(div_up(target, m_count), n_tiles);
              const GemmTasks t = gemm_tasks(mr, nr, m, n, k, threads, GemmSplit::kRowsFirst);
              EXPECT_EQ(t.m_step, div_up(m_tiles, m_count) * mr);
              EXPECT_EQ(t.n_step, div_up(n_tiles, n_count) * nr);
              EXPECT_EQ(t.m_count, div_up(m > 0 ? m : 1, t.m_step));
              EXPECT_EQ(t.n_count, div_up(n > 0 ? n : 1, t.n_step));
              if (HasFailure()) return;
            }
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::kernels
