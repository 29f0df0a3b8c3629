// The cpu backend's Conv (GEMM / im2col path, Winograd, pixel rows, direct few-channel rows and
// depthwise kernels) against the ref backend over
// tile-derived and awkward shapes: channel counts around the GEMM tiles, odd non-square planes,
// strides, pads, dilation, groups, kernel sizes 1..7, bias, fused activations and residuals.
#include <algorithm>
#include <string>
#include <vector>

#include "cpu_test_util.h"
#include "backends/cpu/cpu_conv_util.h"
#include "kernels/cpu_features.h"
#include "kernels/f32-sconv/f32_sconv.h"

namespace nfuse {
namespace {

using cpu_test::OneNode;

struct ConvCase {
  ConvCase(int64_t n_, int64_t c_, int64_t h_, int64_t w_, int64_t m_, int64_t k_, int64_t stride_ = 1,
           int64_t pad_ = 0, int64_t dilation_ = 1, int64_t group_ = 1, bool bias_ = true, std::string act_ = "",
           bool residual_ = false, bool row_ = false)
      : n(n_),
        c(c_),
        h(h_),
        w(w_),
        m(m_),
        k(k_),
        stride(stride_),
        pad(pad_),
        dilation(dilation_),
        group(group_),
        bias(bias_),
        act(std::move(act_)),
        residual(residual_),
        row(row_) {}
  int64_t n, c, h, w, m, k;
  int64_t stride, pad, dilation, group;
  bool bias;
  std::string act;  // "" | Relu | Clip | HardSwish | Sigmoid | LeakyRelu | Tanh, "+affine": nfuse.affine too
  bool residual;
  bool row;  // a 1 x k kernel on a 1-row input (h must be 1): a lifted Conv1d
};

std::string describe(const ConvCase& c) {
  return "conv n" + std::to_string(c.n) + " c" + std::to_string(c.c) + " " + std::to_string(c.h) + "x" +
         std::to_string(c.w) + " m" + std::to_string(c.m) + " k" + std::to_string(c.k) + " s" +
         std::to_string(c.stride) + " p" + std::to_string(c.pad) + " d" + std::to_string(c.dilation) + " g" +
         std::to_string(c.group) + (c.bias ? " bias" : "") + (c.act.empty() ? "" : " " + c.act) +
         (c.residual ? " residual" : "") + (c.row ? " row" : "");
}

// Runs the case on the algorithm `algo` forces (im2col + GEMM unless a test says otherwise: kAuto
// would send some 3x3 cases to Winograd, whose tolerance is wider).
void check(const ConvCase& c, std::mt19937& rng, int threads = 1,
           backends::cpu::ConvAlgorithm algo = backends::cpu::ConvAlgorithm::kIm2colGemm) {
  backends::cpu::ScopedConvAlgorithm force(algo);
  OneNode node;
  node.op = "Conv";
  node.inputs.push_back({cpu_test::random_tensor({c.n, c.c, c.h, c.w}, rng), false});
  const int64_t kh = c.row ? 1 : c.k, ph = c.row ? 0 : c.pad, sh = c.row ? 1 : c.stride, dh = c.row ? 1 : c.dilation;
  node.inputs.push_back({cpu_test::random_tensor({c.m, c.c / c.group, kh, c.k}, rng), true});
  if (c.bias) node.inputs.push_back({cpu_test::random_tensor({c.m}, rng), true});
  node.attrs.set("kernel_shape", std::vector<int64_t>{kh, c.k});
  node.attrs.set("strides", std::vector<int64_t>{sh, c.stride});
  node.attrs.set("pads", std::vector<int64_t>{ph, c.pad, ph, c.pad});
  node.attrs.set("dilations", std::vector<int64_t>{dh, c.dilation});
  node.attrs.set("group", c.group);
  const bool affine = c.act.ends_with("+affine");
  const std::string act = affine ? c.act.substr(0, c.act.size() - 7) : c.act;
  if (act == "Relu") cpu_test::set_activation(node.attrs, "Relu", {});
  if (act == "Clip") cpu_test::set_activation(node.attrs, "Clip", {0.0f, 0.5f});
  if (act == "HardSwish") cpu_test::set_activation(node.attrs, "HardSwish", {1.0f / 6.0f, 0.5f});
  if (act == "Sigmoid") cpu_test::set_activation(node.attrs, "Sigmoid", {});
  if (act == "LeakyRelu") cpu_test::set_activation(node.attrs, "LeakyRelu", {0.1f});
  if (act == "Tanh") cpu_test::set_activation(node.attrs, "Tanh", {});
  if (affine) node.attrs.set(ops::kFusedAffineAttr, std::vector<float>{-1.75f, 0.625f});
  if (c.residual) {
    const int64_t ek = (c.k - 1) * c.dilation + 1;
    const int64_t ho = c.row ? 1 : (c.h + 2 * c.pad - ek) / c.stride + 1, wo = (c.w + 2 * c.pad - ek) / c.stride + 1;
    node.residual = cpu_test::random_tensor({c.n, c.m, ho, wo}, rng);
  }
  const bool winograd =
      (algo == backends::cpu::ConvAlgorithm::kWinograd || algo == backends::cpu::ConvAlgorithm::kAuto) && !c.row &&
      c.k == 3 && c.stride == 1 && c.dilation == 1 && c.group == 1;
  cpu_test::expect_matches_ref(node, c.c / c.group * kh * c.k, describe(c), threads,
                               winograd ? test::f32_wino43_tol : test::f32_gemm_tol);
}

TEST(CpuConv, PointwiseChannelSweep) {
  std::mt19937 rng(cpu_test::kSeed);
  for (int64_t c : {1, 3, 4, 7, 8, 15, 16, 17, 31}) {
    for (int64_t m : {1, 3, 8, 13, 16, 17, 31, 33}) check({1, c, 5, 7, m, 1}, rng);
  }
  check({2, 33, 9, 11, 40, 1}, rng);     // batch 2, several strips of pixels
  check({1, 300, 17, 19, 25, 1}, rng);   // K larger than one K block
  check({1, 16, 13, 9, 24, 1, 2}, rng);  // stride 2 1x1 (downsampling shortcut)
}

TEST(CpuConv, WindowSweep) {
  std::mt19937 rng(cpu_test::kSeed + 1);
  for (int64_t k : {3, 5, 7}) {
    for (int64_t s : {1, 2}) {
      for (int64_t p : {int64_t{0}, int64_t{1}, k / 2}) {
        check({1, 3, 13, 11, 8, k, s, p}, rng);
        check({1, 17, 9, 14, 31, k, s, p}, rng);
      }
    }
  }
  check({1, 8, 15, 13, 16, 3, 1, 2, 2}, rng);  // dilation 2
  check({1, 5, 20, 17, 7, 3, 2, 3, 3}, rng);   // dilation 3, pad 3, stride 2
  check({2, 64, 14, 14, 70, 3, 1, 1}, rng);    // K = 576 > one K block, two images
}

TEST(CpuConv, Groups) {
  std::mt19937 rng(cpu_test::kSeed + 2);
  check({1, 8, 9, 7, 16, 3, 1, 1, 1, 2}, rng);
  check({1, 12, 10, 11, 6, 3, 2, 1, 1, 3}, rng);
  check({1, 16, 7, 9, 32, 1, 1, 0, 1, 4}, rng);
  check({1, 32, 8, 8, 32, 3, 1, 1, 1, 8}, rng);
}

TEST(CpuConv, Depthwise) {
  std::mt19937 rng(cpu_test::kSeed + 3);
  for (int64_t c : {1, 3, 4, 7, 8, 15, 16, 17, 31}) {
    for (int64_t k : {3, 5}) {
      for (int64_t s : {1, 2}) {
        check({1, c, 13, 19, c, k, s, k / 2, 1, c}, rng);  // widths below and above the 8-wide vectors
      }
    }
  }
  check({2, 16, 7, 33, 16, 3, 2, 1, 1, 16}, rng);
  check({1, 8, 12, 12, 8, 3, 1, 0, 1, 8}, rng);   // no padding
  check({1, 8, 11, 12, 8, 3, 2, 0, 1, 8}, rng);   // stride 2, no padding, odd height
  check({1, 6, 9, 10, 6, 7, 1, 3, 1, 6}, rng);    // 7x7: generic kernel
  check({1, 6, 15, 16, 6, 3, 1, 2, 2, 6}, rng);   // dilation 2: the 3x3 kernel's dilated form
  check({1, 5, 23, 37, 5, 5, 1, 4, 2, 5}, rng);   // 5x5 dilation 2 (LR-ASPP's dilated stage)
  check({1, 5, 19, 29, 5, 3, 2, 3, 3, 5}, rng);   // stride 2, dilation 3
  check({1, 6, 9, 10, 6, 3, 1, 1, 1, 6, false}, rng);
}

TEST(CpuConv, DepthwiseScalarKernels) {
  // The same through the portable kernels (what a CPU without AVX2 runs).
  kernels::ScopedIsaOverride scalar(kernels::Isa::kScalar);
  std::mt19937 rng(cpu_test::kSeed + 4);
  for (int64_t k : {3, 5})
    for (int64_t s : {1, 2}) check({1, 7, 11, 13, 7, k, s, k / 2, 1, 7}, rng);
}

TEST(CpuConv, Epilogues) {
  std::mt19937 rng(cpu_test::kSeed + 5);
  for (const char* act : {"Relu", "Clip", "HardSwish", "Sigmoid", "LeakyRelu", "Tanh"}) {
    for (bool residual : {false, true}) {
      check({1, 17, 9, 11, 19, 1, 1, 0, 1, 1, true, act, residual}, rng);
      check({1, 7, 9, 11, 15, 3, 1, 1, 1, 1, false, act, residual}, rng);
      check({1, 16, 9, 11, 16, 3, 1, 1, 1, 16, true, act, residual}, rng);  // depthwise
    }
  }
  check({1, 8, 9, 11, 8, 3, 1, 1, 1, 1, false, "", true}, rng);  // residual, no bias
  // The bias rides as an extra K column: bias and residual across several K blocks, and K at
  // the usual block sizes, where the bias column must not spill into a block of its own.
  check({1, 300, 9, 11, 25, 1, 1, 0, 1, 1, true, "Relu", true}, rng);
  check({1, 64, 10, 9, 21, 3, 1, 1, 1, 1, true, "HardSwish", true}, rng);
  for (int64_t c : {64, 128, 192, 256, 512}) check({1, c, 6, 7, 13, 1, 1, 0, 1, 1, true, "", true}, rng);
}

TEST(CpuConv, Threads) {
  std::mt19937 rng(cpu_test::kSeed + 6);
  for (int threads : {2, 3}) {
    check({1, 32, 28, 28, 64, 1}, rng, threads);
    check({1, 64, 7, 7, 96, 3, 1, 1}, rng, threads);  // few pixels: split over output channels
    check({1, 24, 19, 21, 24, 3, 2, 1, 1, 24}, rng, threads);
    check({2, 16, 14, 15, 33, 3, 1, 1, 1, 1, true, "Relu", true}, rng, threads);
  }
}

// Winograd F(4,3), forced on every 3x3 stride-1 case whatever its size: planes that are not tile
// multiples, pads 0..2, channel counts around the GEMM's MR and K block, blocks that span tile
// rows and several blocks per plane, batch, threads and every epilogue.
TEST(CpuConv, Winograd) {
  using backends::cpu::ConvAlgorithm;
  std::mt19937 rng(cpu_test::kSeed + 7);
  const ConvAlgorithm wino = ConvAlgorithm::kWinograd;
  for (int64_t c : {1, 3, 8, 17}) {
    for (int64_t m : {1, 5, 12, 13, 31}) check({1, c, 7, 9, m, 3, 1, 1}, rng, 1, wino);
  }
  for (int64_t h : {3, 4, 5, 8, 13}) {
    for (int64_t w : {3, 4, 6, 11, 30}) {
      for (int64_t p : {0, 1, 2}) check({1, 4, h, w, 6, 3, 1, p}, rng, 1, wino);
    }
  }
  check({1, 300, 9, 10, 14, 3, 1, 1}, rng, 1, wino);   // Ci over one K block
  check({1, 8, 70, 75, 9, 3, 1, 1}, rng, 1, wino);     // several blocks of tiles
  check({2, 16, 14, 15, 33, 3, 1, 1}, rng, 1, wino);   // batch
  for (const char* act : {"Relu", "Clip", "HardSwish", "Sigmoid", "LeakyRelu"}) {
    for (bool residual : {false, true}) check({1, 7, 9, 11, 15, 3, 1, 1, 1, 1, true, act, residual}, rng, 1, wino);
  }
  check({1, 8, 9, 11, 8, 3, 1, 1, 1, 1, false, "", true}, rng, 1, wino);  // residual, no bias
  for (int threads : {2, 3}) {
    check({1, 16, 28, 28, 32, 3, 1, 1, 1, 1, true, "Relu", true}, rng, threads, wino);
    check({2, 24, 9, 13, 16, 3, 1, 1}, rng, threads, wino);
    check({1, 32, 60, 61, 16, 3, 1, 1}, rng, threads, wino);
  }
}

// The X * W (pixels as GEMM rows) orientation, forced: pixel counts around MR and NR, channel
// counts around NR, K over one block, strides, pads, dilation, batch, threads, epilogues.
TEST(CpuConv, PixelRows) {
  using backends::cpu::ConvAlgorithm;
  std::mt19937 rng(cpu_test::kSeed + 9);
  const ConvAlgorithm rows = ConvAlgorithm::kPixelRows;
  for (int64_t hw : {1, 3, 4, 7}) {
    for (int64_t m : {1, 13, 31, 32, 33, 64}) check({1, 8, hw, hw + 1, m, 1}, rng, 1, rows);
  }
  check({1, 300, 7, 7, 40, 1}, rng, 1, rows);                 // K over one block
  check({1, 17, 14, 14, 33, 3, 1, 1}, rng, 1, rows);          // 196 pixels
  check({1, 16, 14, 15, 20, 3, 2, 1}, rng, 1, rows);          // stride 2
  check({1, 16, 13, 14, 48, 1, 2}, rng, 1, rows);             // 1x1 stride 2 (downsample)
  check({1, 5, 12, 11, 7, 3, 1, 2, 2}, rng, 1, rows);         // dilation 2
  check({2, 12, 7, 7, 24, 3, 1, 1, 1, 1, true, "Relu", true}, rng, 1, rows);  // batch, residual
  for (const char* act : {"Clip", "HardSwish", "Sigmoid", "LeakyRelu"})
    check({1, 9, 7, 8, 35, 3, 1, 1, 1, 1, false, act, true}, rng, 1, rows);
  for (int threads : {2, 3}) {
    check({1, 64, 7, 7, 96, 3, 1, 1, 1, 1, true, "Relu", true}, rng, threads, rows);
    check({2, 33, 14, 14, 65, 1}, rng, threads, rows);
    // Threads splitting the columns share one packed A written by the im2col: several last
    // pixels past the MR panels, one and two K blocks, stride 2.
    check({1, 20, 5, 7, 100, 3, 1, 1}, rng, threads, rows);  // 35 pixels, K 180
    check({1, 40, 6, 5, 70, 3, 1, 1}, rng, threads, rows);   // 30 pixels, K 360
    check({2, 24, 9, 11, 64, 3, 2, 1}, rng, threads, rows);  // 5 x 6 pixels, batch 2
  }
}

// Few input channels (a stem), direct on the f32-sconv rows: 1, 3 and 4 channels, kernels 1x1 to
// 7x7 (up to 64 taps), stride 1 and 2, pads up to half the window, output channel counts odd and
// even (the kernel's channel pairs), every activation (clamped in the kernel or applied after),
// no bias, batch 2 and 2 or 3 threads splitting the rows.
TEST(CpuConv, SmallChannelsDirect) {
  using backends::cpu::ConvAlgorithm;
  std::mt19937 rng(cpu_test::kSeed + 11);
  const ConvAlgorithm direct = ConvAlgorithm::kSmallChannels;
  for (int64_t c : {1, 3, 4})
    for (int64_t k : {1, 3, 5, 6, 7}) {
      if (c * k * k > static_cast<int64_t>(kernels::kF32SconvMaxTaps)) continue;
      for (int64_t s : {1, 2})
        for (int64_t p : {int64_t{0}, k / 2}) check({1, c, 13, 70, c == 3 ? 16 : 5, k, s, p}, rng, 1, direct);
    }
  for (const char* act : {"Relu", "Clip", "HardSwish", "Sigmoid", "LeakyRelu", "Tanh"})
    check({1, 3, 9, 17, 17, 3, 2, 1, 1, 1, true, act}, rng, 1, direct);
  check({1, 3, 11, 9, 8, 3, 1, 1, 1, 1, false}, rng, 1, direct);
  check({2, 3, 25, 33, 16, 3, 2, 1, 1, 1, true, "HardSwish"}, rng, 2, direct);
  check({1, 4, 40, 129, 12, 3, 1, 1}, rng, 3, direct);
}

// The cost-based choice (Winograd for the larger 3x3 layers, pixel rows for small maps, im2col
// otherwise) gives the right answer either way.
TEST(CpuConv, AutomaticAlgorithm) {
  using backends::cpu::ConvAlgorithm;
  std::mt19937 rng(cpu_test::kSeed + 8);
  check({1, 32, 28, 28, 32, 3, 1, 1, 1, 1, true, "Relu", true}, rng, 1, ConvAlgorithm::kAuto);
  check({1, 16, 7, 7, 16, 3, 1, 1}, rng, 2, ConvAlgorithm::kAuto);
  check({1, 3, 28, 28, 16, 3, 1, 1}, rng, 1, ConvAlgorithm::kAuto);
  check({1, 64, 7, 7, 64, 3, 1, 1, 1, 1, true, "Relu", true}, rng, 2, ConvAlgorithm::kAuto);  // pixel rows
}

// Convolutions over one row (lifted Conv1d), forced onto the phase-split tap GEMM and, for the
// same shapes, the im2col GEMM: strides 1 to 5 (1 and 2 have copies of their own), dilation,
// pads up to past the window, a stride larger than the kernel, channel counts around the
// microkernel's MR and one K block (several channel blocks per tap), outputs shorter than one NR
// panel and spanning several strips, groups, batch, every epilogue, threads; and kAuto on a
// Conv1d stack's shapes.
TEST(CpuConv, RowTaps) {
  using backends::cpu::ConvAlgorithm;
  std::mt19937 rng(cpu_test::kSeed + 13);
  auto row = [&](int64_t n, int64_t c, int64_t w, int64_t m, int64_t k, int64_t s, int64_t p, int64_t d = 1,
                 int64_t g = 1, bool bias = true, std::string act = "", bool residual = false, int threads = 1,
                 ConvAlgorithm algo = ConvAlgorithm::kRowTaps) {
    check({n, c, 1, w, m, k, s, p, d, g, bias, std::move(act), residual, true}, rng, threads, algo);
  };
  for (int64_t s : {1, 2, 3, 5}) {
    for (int64_t k : {1, 2, 3, 5, 10}) {
      for (int64_t p : {int64_t{0}, k / 2, k}) {
        row(1, 9, 61, 13, k, s, p);
        row(1, 40, 157, 33, k, s, p);
      }
    }
  }
  row(1, 8, 50, 8, 3, 1, 2, 2);              // dilation 2
  row(1, 12, 80, 17, 3, 2, 3, 3);            // dilation 3, stride 2: shift 3 of 2 phases
  row(1, 16, 40, 9, 2, 7, 0);                // stride past the kernel: columns skipped
  row(1, 1, 300, 64, 10, 5, 0);              // one input channel (a wav2vec-style stem)
  row(1, 500, 37, 20, 3, 2, 1);              // channels over one K block: blocks per tap
  row(1, 64, 3199, 64, 3, 2, 0);             // a Conv1d stack's layer: several strips
  row(1, 64, 5, 12, 3, 2, 0);                // two outputs
  row(2, 48, 77, 40, 3, 1, 1);               // batch
  row(1, 32, 45, 24, 3, 1, 1, 1, 4);         // groups
  row(1, 36, 90, 35, 5, 2, 2, 1, 1, false);  // no bias
  for (const char* act : {"Relu", "Clip", "HardSwish", "Sigmoid", "LeakyRelu", "Tanh", "Relu+affine"}) {
    for (bool residual : {false, true}) row(1, 33, 70, 19, 3, 2, 1, 1, 1, true, act, residual);
  }
  for (int threads : {2, 3}) {
    row(1, 64, 1001, 64, 3, 2, 0, 1, 1, true, "Relu", true, threads);
    row(1, 40, 60, 70, 5, 1, 2, 1, 1, true, "", false, threads);  // one strip: split over channels
    row(2, 32, 333, 16, 4, 3, 1, 1, 2, true, "Sigmoid", false, threads);
  }
  for (int64_t s : {1, 2, 3}) row(1, 40, 157, 33, 3, s, 1, 1, 1, true, "", false, 1, ConvAlgorithm::kIm2colGemm);
  row(1, 64, 3199, 64, 3, 2, 0, 1, 1, true, "", false, 2, ConvAlgorithm::kAuto);
  row(1, 64, 99, 64, 2, 2, 0, 1, 1, true, "Relu", false, 1, ConvAlgorithm::kAuto);
  // The other microkernel shapes (NR 16 and 8: other strips and phase rows).
  for (kernels::Isa isa : {kernels::Isa::kAvx2Fma, kernels::Isa::kScalar}) {
    if (!kernels::isa_supported(isa)) continue;
    kernels::ScopedIsaOverride force_isa(isa);
    row(1, 40, 157, 33, 3, 2, 1);
    row(1, 20, 300, 13, 5, 3, 2, 2, 1, true, "Relu", true, 2);
    row(1, 300, 41, 9, 2, 1, 1);
  }
}

// nfuse.affine after the activation (fuse_affine: PP-LCNet's learnable affine blocks) on every
// algorithm and the depthwise paths, with and without a residual: the HardSwish the depthwise
// kernels apply in their store, the clamps the GEMMs apply, and the activations applied as a pass
// must each be followed by the affine exactly once.
TEST(CpuConv, AffineAfterEveryActivationAndAlgorithm) {
  using backends::cpu::ConvAlgorithm;
  std::mt19937 rng(cpu_test::kSeed + 12);
  for (const char* act : {"+affine", "Relu+affine", "Clip+affine", "HardSwish+affine", "Sigmoid+affine"}) {
    for (bool residual : {false, true}) {
      check({1, 17, 9, 11, 19, 1, 1, 0, 1, 1, true, act, residual}, rng);                  // im2col GEMM
      check({1, 16, 12, 13, 16, 3, 1, 1, 1, 1, true, act, residual}, rng, 1, ConvAlgorithm::kWinograd);
      check({1, 9, 7, 8, 35, 3, 1, 1, 1, 1, false, act, residual}, rng, 1, ConvAlgorithm::kPixelRows);
      check({1, 16, 9, 11, 16, 3, 1, 1, 1, 16, true, act, residual}, rng);                 // depthwise, copied
      check({1, 2, 90, 101, 2, 3, 2, 1, 1, 2, true, act, residual}, rng, 2);               // depthwise, in place
    }
    check({1, 3, 9, 17, 17, 3, 2, 1, 1, 1, true, act}, rng, 1, ConvAlgorithm::kSmallChannels);
  }
}

// Depthwise through both of the op's paths (small planes: a padded copy; planes over 8192 padded
// floats: read in place, the kernels handling the border) and its task shapes: few planes over
// several threads (row strips), many small planes (several planes per task), pads up to and past
// the window, dilation, batch, HardSwish applied in the kernels' store, the activations still
// applied as a pass, a residual, and the scalar kernels on the same.
TEST(CpuConv, DepthwiseTasksAndBorders) {
  std::mt19937 rng(cpu_test::kSeed + 10);
  for (int threads : {1, 2, 3}) {
    check({1, 2, 90, 101, 2, 3, 1, 1, 1, 2}, rng, threads);                         // in place, row strips
    check({1, 3, 97, 95, 3, 5, 2, 2, 1, 3, true, "HardSwish"}, rng, threads);       // in place, stride 2
    check({1, 2, 70, 130, 2, 5, 1, 4, 2, 2, true, "Relu", true}, rng, threads);     // in place, dilated
    check({1, 2, 37, 29, 2, 3, 1, 1, 1, 2}, rng, threads);                          // copied
    check({1, 1, 20, 41, 1, 5, 2, 2, 1, 1, true, "HardSwish"}, rng, threads);
    check({2, 3, 18, 17, 3, 5, 1, 4, 2, 3, true, "Relu"}, rng, threads);              // dilated, batch
    check({1, 96, 7, 7, 96, 5, 1, 2, 1, 96, true, "HardSwish"}, rng, threads);        // many small planes
    check({1, 40, 9, 9, 40, 3, 2, 1, 1, 40, false, "Sigmoid"}, rng, threads);
  }
  check({1, 4, 9, 35, 4, 3, 1, 3, 1, 4}, rng);  // pad = window: border rows with no taps inside
  check({1, 4, 10, 21, 4, 5, 2, 4, 1, 4, true, "Clip"}, rng);
  check({1, 2, 85, 99, 2, 3, 1, 3, 1, 2}, rng);  // the same in place
  check({1, 2, 80, 113, 2, 5, 2, 4, 1, 2, true, "Clip"}, rng);
  check({1, 6, 11, 13, 6, 3, 1, 1, 1, 6, true, "HardSwish", true}, rng, 2);  // residual: HardSwish as a pass
  kernels::ScopedIsaOverride scalar(kernels::Isa::kScalar);
  check({1, 5, 12, 19, 5, 5, 1, 2, 2, 5, true, "HardSwish"}, rng, 2);
  check({1, 5, 12, 19, 5, 3, 2, 1, 1, 5, true, "Relu", true}, rng);
  check({1, 4, 9, 35, 4, 3, 1, 3, 1, 4}, rng);
  check({1, 2, 90, 101, 2, 5, 2, 2, 1, 2, true, "HardSwish"}, rng, 3);
}

// The W * X task plan covers every pixel and output row once, and on few strips spreads the work
// so that the threads finish nearly together when each takes the next task (196 pixels in
// 64-pixel strips would be 64, 64, 64 and 4: one of two threads idle for a third of the op).
// Runs plan_wx_tasks' tasks in index order, each to the least loaded thread (the pool hands
// them out in that order): checks that every (image, pixel, row) is covered once by non-empty
// tasks no wider than max_strip, and returns the load of the thread that ends last.
size_t check_wx_plan(size_t outer, size_t p, size_t max_strip, size_t nr, size_t mr, size_t rows, size_t threads) {
  const size_t panels = (rows + mr - 1) / mr;
  const backends::cpu::WxTasks t = backends::cpu::plan_wx_tasks(outer, p, max_strip, nr, panels, mr, rows, threads);
  std::vector<size_t> covered(outer * p * rows, 0);
  std::vector<size_t> load(threads, 0);
  for (size_t i = 0; i < t.count(); ++i) {
    const backends::cpu::WxTasks::Task k = t.task(i, 1, p, rows);
    EXPECT_GT(k.np, 0u);
    EXPECT_LT(k.m0, k.m1);
    EXPECT_LE(k.np, max_strip);
    EXPECT_EQ(k.p0 % nr, 0u);
    for (size_t q = k.p0; q < k.p0 + k.np && q < p; ++q)
      for (size_t m = k.m0; m < k.m1 && m < rows; ++m) ++covered[(k.image * p + q) * rows + m];
    *std::min_element(load.begin(), load.end()) += k.np * (k.m1 - k.m0);
  }
  EXPECT_EQ(std::count(covered.begin(), covered.end(), 1u), static_cast<long>(covered.size()));
  return *std::max_element(load.begin(), load.end());
}

TEST(CpuConvTasks, FewStripsSpreadEvenlyOverTheThreads) {
  const size_t nr = 32, mr = 12, rows = 512;
  for (size_t threads : {2, 3, 4}) {
    for (size_t p : {49, 196, 200, 784, 1000}) {
      for (size_t outer : {1, 2}) {
        SCOPED_TRACE(testing::Message() << "threads " << threads << " pixels " << p << " images " << outer);
        const size_t most = check_wx_plan(outer, p, 2 * nr, nr, mr, rows, threads);
        // Few strips are planned to within 2% of an even share, give or take a panel of rows of
        // one strip; many strips are left as they are, each a small part of the op.
        const size_t even = (outer * p * rows + threads - 1) / threads;
        if (outer * ((p + 2 * nr - 1) / (2 * nr)) < 4 * threads) {
          EXPECT_LE(most * 100, even * 102 + 100 * mr * std::min(p, 2 * nr));
        } else {
          EXPECT_LE(most, even + 2 * nr * rows);
        }
      }
    }
  }
}

// Edge shapes: fewer pixels than a panel, fewer channels than a panel of rows, one-panel strips,
// more threads than tasks can be made, three images.
TEST(CpuConvTasks, EdgeShapesAreCoveredOnceByNonEmptyTasks) {
  const size_t nr = 32, mr = 12;
  for (size_t threads : {1, 2, 3, 16}) {
    for (size_t p : {1, 5, 32, 33, 49, 196}) {
      for (size_t rows : {1, 8, 12, 13, 512}) {
        for (size_t max_strip : {nr, 2 * nr, 8 * nr}) {
          for (size_t outer : {1, 3}) {
            SCOPED_TRACE(testing::Message() << "threads " << threads << " pixels " << p << " rows " << rows
                                            << " max_strip " << max_strip << " images " << outer);
            check_wx_plan(outer, p, max_strip, nr, mr, rows, threads);
            if (HasFailure()) return;
          }
        }
      }
    }
  }
}

}  // namespace
}  // namespace nfuse
