// The cpu backend's ConvTranspose (GEMM + col2im) against the ref backend: kernels 1..5, strides
// 1..3, symmetric and asymmetric pads, output_padding, dilation, groups (depthwise-like too),
// bias or none, odd non-square planes, channel counts around the GEMM tiles, batch, threads,
// auto_pad SAME_*, output_shape, and the fused activation / residual epilogue.
#include <string>

#include "cpu_test_util.h"
#include "kernels/cpu_features.h"

namespace nfuse {
namespace {

using cpu_test::OneNode;

struct TCase {
  int64_t n = 1, c = 1, h = 5, w = 7, m = 1;  // input channels c, output channels m
  int64_t kh = 3, kw = 3;
  int64_t sh = 1, sw = 1;
  std::vector<int64_t> pads = {0, 0, 0, 0};  // top, left, bottom, right
  int64_t dh = 1, dw = 1;
  int64_t group = 1;
  std::vector<int64_t> output_padding;  // empty: absent
  std::vector<int64_t> output_shape;    // empty: absent
  std::string auto_pad;                 // empty: absent
  bool bias = true;
  std::string act;  // "" | Relu | Sigmoid
  bool residual = false;
};

std::string describe(const TCase& c) {
  auto vec = [](const std::vector<int64_t>& v) {
    std::string s;
    for (int64_t x : v) s += (s.empty() ? "" : ",") + std::to_string(x);
    return "[" + s + "]";
  };
  return "convT n" + std::to_string(c.n) + " c" + std::to_string(c.c) + " " + std::to_string(c.h) + "x" +
         std::to_string(c.w) + " m" + std::to_string(c.m) + " k" + std::to_string(c.kh) + "x" + std::to_string(c.kw) +
         " s" + std::to_string(c.sh) + "x" + std::to_string(c.sw) + " p" + vec(c.pads) + " d" + std::to_string(c.dh) +
         "x" + std::to_string(c.dw) + " g" + std::to_string(c.group) +
         (c.output_padding.empty() ? "" : " op" + vec(c.output_padding)) +
         (c.output_shape.empty() ? "" : " os" + vec(c.output_shape)) + (c.auto_pad.empty() ? "" : " " + c.auto_pad) +
         (c.bias ? " bias" : "") + (c.act.empty() ? "" : " " + c.act) + (c.residual ? " residual" : "");
}

// The output dims as the ONNX spec gives them (for the residual input).
std::vector<int64_t> out_dims(const TCase& c) {
  std::vector<int64_t> d = {c.n, c.m};
  const int64_t in[2] = {c.h, c.w}, k[2] = {c.kh, c.kw}, s[2] = {c.sh, c.sw}, dl[2] = {c.dh, c.dw};
  for (int i = 0; i < 2; ++i) {
    if (!c.output_shape.empty()) {
      d.push_back(c.output_shape[static_cast<size_t>(i)]);
    } else if (c.auto_pad == "SAME_UPPER" || c.auto_pad == "SAME_LOWER") {
      d.push_back(in[i] * s[i]);
    } else {
      const int64_t op = c.output_padding.empty() ? 0 : c.output_padding[static_cast<size_t>(i)];
      const int64_t pads = c.auto_pad == "VALID" ? 0 : c.pads[static_cast<size_t>(i)] + c.pads[static_cast<size_t>(i) + 2];
      d.push_back(s[i] * (in[i] - 1) + op + (k[i] - 1) * dl[i] + 1 - pads);
    }
  }
  return d;
}

void check(const TCase& c, std::mt19937& rng, int threads = 1) {
  OneNode node;
  node.op = "ConvTranspose";
  node.inputs.push_back({cpu_test::random_tensor({c.n, c.c, c.h, c.w}, rng), false});
  node.inputs.push_back({cpu_test::random_tensor({c.c, c.m / c.group, c.kh, c.kw}, rng), true});
  if (c.bias) node.inputs.push_back({cpu_test::random_tensor({c.m}, rng), true});
  node.attrs.set("kernel_shape", std::vector<int64_t>{c.kh, c.kw});
  node.attrs.set("strides", std::vector<int64_t>{c.sh, c.sw});
  node.attrs.set("dilations", std::vector<int64_t>{c.dh, c.dw});
  node.attrs.set("group", c.group);
  if (c.auto_pad.empty()) {
    node.attrs.set("pads", c.pads);
  } else {
    node.attrs.set("auto_pad", c.auto_pad);
  }
  if (!c.output_padding.empty()) node.attrs.set("output_padding", c.output_padding);
  if (!c.output_shape.empty()) node.attrs.set("output_shape", c.output_shape);
  if (c.act == "Relu") cpu_test::set_activation(node.attrs, "Relu", {});
  if (c.act == "Sigmoid") cpu_test::set_activation(node.attrs, "Sigmoid", {});
  if (c.act == "Clip") cpu_test::set_activation(node.attrs, "Clip", {-0.2f, 0.5f});
  if (c.residual) node.residual = cpu_test::random_tensor(out_dims(c), rng);
  // Each output sums at most Ci/group * taps products.
  cpu_test::expect_matches_ref(node, c.c / c.group * c.kh * c.kw, describe(c), threads);
}

TCase base(int64_t c, int64_t m, int64_t k, int64_t s, int64_t pad) {
  TCase t;
  t.c = c;
  t.m = m;
  t.kh = t.kw = k;
  t.sh = t.sw = s;
  t.pads = {pad, pad, pad, pad};
  return t;
}

TEST(CpuConvTranspose, ChannelSweep) {
  std::mt19937 rng(cpu_test::kSeed + 100);
  for (int64_t c : {1, 3, 8, 12, 13, 17, 33}) {
    for (int64_t m : {1, 3, 8, 12, 13, 17, 33}) check(base(c, m, 2, 2, 0), rng);
  }
  TCase big = base(300, 20, 2, 2, 0);  // K over one K block
  big.h = 6;
  big.w = 5;
  check(big, rng);
  TCase rows = base(8, 300, 4, 2, 1);  // col rows over one chunk
  rows.h = 4;
  rows.w = 6;
  check(rows, rng);
}

TEST(CpuConvTranspose, WindowSweep) {
  std::mt19937 rng(cpu_test::kSeed + 101);
  for (int64_t k = 1; k <= 5; ++k) {
    for (int64_t s = 1; s <= 3; ++s) {
      for (int64_t p : {int64_t{0}, int64_t{1}, (k - 1) / 2}) {
        if (p >= k) continue;  // pads must leave a non-empty output; keep them below the kernel
        TCase t = base(5, 7, k, s, p);
        t.h = 7;
        t.w = 9;
        check(t, rng);
      }
    }
  }
  // Non-square kernels and strides, odd planes.
  TCase t = base(6, 9, 3, 2, 1);
  t.kw = 5;
  t.sw = 3;
  t.h = 11;
  t.w = 4;
  check(t, rng);
  t = base(4, 5, 1, 3, 0);
  t.kw = 4;
  t.sh = 1;
  t.h = 3;
  t.w = 13;
  check(t, rng);
}

TEST(CpuConvTranspose, PadsPaddingDilation) {
  std::mt19937 rng(cpu_test::kSeed + 102);
  TCase t = base(7, 5, 3, 2, 0);
  t.h = 9;
  t.w = 6;
  t.pads = {0, 1, 2, 1};  // asymmetric
  check(t, rng);
  t.pads = {2, 0, 1, 2};
  check(t, rng);
  t.pads = {1, 1, 1, 1};
  t.output_padding = {1, 1};
  check(t, rng);
  t.output_padding = {1, 0};
  t.sh = 3;
  check(t, rng);
  t = base(6, 8, 3, 1, 1);
  t.dh = t.dw = 2;
  t.h = 8;
  t.w = 11;
  check(t, rng);
  t.sh = 2;
  t.dw = 1;
  t.pads = {2, 1, 3, 0};
  t.output_padding = {1, 0};
  check(t, rng);
  t = base(5, 4, 5, 2, 4);  // pads of the whole dilated-minus-one kernel
  t.h = 7;
  t.w = 7;
  check(t, rng);
  t = base(3, 5, 4, 2, 1);
  t.dh = t.dw = 2;
  t.h = 5;
  t.w = 9;
  t.bias = false;
  check(t, rng);
}

TEST(CpuConvTranspose, Groups) {
  std::mt19937 rng(cpu_test::kSeed + 103);
  TCase t = base(8, 12, 3, 2, 1);
  t.group = 2;
  check(t, rng);
  t = base(12, 9, 4, 2, 1);
  t.group = 3;
  t.h = 6;
  t.w = 11;
  check(t, rng);
  for (int64_t c : {1, 3, 8, 17}) {  // depthwise-like: group == Ci == Co
    t = base(c, c, 4, 2, 1);
    t.group = c;
    t.h = 7;
    t.w = 10;
    check(t, rng);
  }
  t = base(16, 32, 2, 2, 0);  // group == Ci, two outputs per group
  t.group = 16;
  check(t, rng);
  t.bias = false;
  check(t, rng);
}

TEST(CpuConvTranspose, AutoPadAndOutputShape) {
  std::mt19937 rng(cpu_test::kSeed + 104);
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    for (int64_t k : {2, 3, 4}) {
      for (int64_t s : {1, 2, 3}) {
        TCase t = base(5, 6, k, s, 0);
        t.h = 7;
        t.w = 6;
        t.auto_pad = mode;
        check(t, rng);
      }
    }
  }
  TCase t = base(4, 6, 3, 2, 0);
  t.h = 6;
  t.w = 7;
  t.output_shape = {12, 14};  // full is 13 x 15: pads split by the spec
  check(t, rng);
  t.output_shape = {13, 15};
  check(t, rng);
  t.output_shape = {15, 16};  // larger than full: the tail keeps the bias only
  check(t, rng);
  t.bias = false;
  t.output_shape = {10, 17};
  check(t, rng);
}

TEST(CpuConvTranspose, BatchAndThreads) {
  std::mt19937 rng(cpu_test::kSeed + 105);
  for (int threads : {1, 2, 3}) {
    TCase t = base(24, 24, 2, 2, 0);  // the OCR detector's upsampling, scaled down
    t.h = 31;
    t.w = 29;
    check(t, rng, threads);
    t.m = 1;
    check(t, rng, threads);
    t = base(13, 17, 3, 2, 1);
    t.n = 2;
    t.h = 9;
    t.w = 12;
    t.output_padding = {1, 1};
    check(t, rng, threads);
    t = base(8, 33, 5, 1, 2);  // taller kernel than stride: band edges recompute input rows
    t.h = 23;
    t.w = 7;
    check(t, rng, threads);
    t = base(6, 1, 3, 3, 0);
    t.h = 40;
    t.w = 3;
    t.dh = 2;
    check(t, rng, threads);
    t = base(12, 12, 3, 2, 1);
    t.group = 3;
    t.n = 2;
    check(t, rng, threads);
  }
}

TEST(CpuConvTranspose, Epilogues) {
  std::mt19937 rng(cpu_test::kSeed + 106);
  for (const char* act : {"", "Relu", "Sigmoid", "Clip"}) {
    for (bool residual : {false, true}) {
      for (int threads : {1, 2}) {
        TCase t = base(9, 13, 2, 2, 0);
        t.h = 11;
        t.w = 13;
        t.act = act;
        t.residual = residual;
        check(t, rng, threads);
        t = base(5, 6, 3, 2, 1);
        t.output_padding = {1, 0};
        t.act = act;
        t.residual = residual;
        t.bias = false;
        check(t, rng, threads);
      }
    }
  }
}

// kernel == stride with no padding runs UpsampleDeconv (each output written once): non-square
// taps, K over one K block, GEMM rows over one MR tile or a fraction of it, rows wider than an
// NR panel with a partial last one, bands of odd height across threads.
TEST(CpuConvTranspose, NonOverlappingTaps) {
  std::mt19937 rng(cpu_test::kSeed + 108);
  for (int threads : {1, 3}) {
    TCase t = base(7, 5, 2, 2, 0);
    t.kw = t.sw = 3;
    t.h = 9;
    t.w = 37;
    check(t, rng, threads);
    t = base(300, 3, 3, 3, 0);
    t.h = 5;
    t.w = 6;
    t.act = "Sigmoid";
    check(t, rng, threads);
    t = base(16, 40, 2, 2, 0);
    t.n = 2;
    t.h = 13;
    t.w = 70;
    t.act = "Clip";
    t.residual = true;
    check(t, rng, threads);
    t = base(24, 1, 2, 2, 0);  // one output channel: two GEMM rows per tap row
    t.h = 3;
    t.w = 100;
    t.bias = false;
    check(t, rng, threads);
  }
}

TEST(CpuConvTranspose, ScalarKernels) {
  // The same through the portable GEMM kernels (what a CPU without AVX2 runs).
  kernels::ScopedIsaOverride scalar(kernels::Isa::kScalar);
  std::mt19937 rng(cpu_test::kSeed + 107);
  for (int64_t m : {1, 5, 13}) {
    TCase t = base(11, m, 3, 2, 1);
    t.output_padding = {1, 1};
    t.act = "Relu";
    check(t, rng);
    check(t, rng, 2);
  }
  TCase t = base(11, 6, 2, 2, 0);  // UpsampleDeconv on the portable kernels
  t.h = 7;
  t.w = 19;
  t.act = "Relu";
  check(t, rng, 2);
}

}  // namespace
}  // namespace nfuse
