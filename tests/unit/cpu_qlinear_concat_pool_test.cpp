// QLinearConcat and QLinearGlobalAveragePool on the cpu backend (cpu_qlinear_concat.cpp,
// cpu_qlinear_pool.cpp) against the ref kernels, bit for bit: u8 and s8, every axis, inputs with
// the output's parameters (copied) and with others (table), zero-size inputs, odd plane sizes,
// saturating requantization, 1 and 3 threads, every ISA this CPU runs. QLinearAveragePool has no
// cpu kernel; its ref kernel is checked against a double-precision loop here instead.
#include <cmath>

#include "backends/cpu/cpu_qlinear_ops.h"
#include "cpu_qlinear_ms_util.h"
#include "kernels/cpu_features.h"

namespace nfuse::cpu_test {
namespace {

struct CInput {
  std::vector<int64_t> dims;
  float scale;
  int64_t zp;
};

TypedNode concat_node(const std::vector<CInput>& ins, int64_t axis, bool is_signed, float ys, int64_t yz,
                      std::mt19937& rng) {
  const ir::DType dt = is_signed ? ir::DType::kI8 : ir::DType::kU8;
  const int64_t off = is_signed ? -128 : 0;
  TypedNode t;
  t.op = "QLinearConcat";
  t.attrs.set("axis", axis);
  t.inputs = {f32_const(ys), {q8_scalar(dt, yz + off), true}};
  for (const CInput& in : ins) {
    t.inputs.push_back({random_q8(dt, in.dims, rng), false});
    t.inputs.push_back(f32_const(in.scale));
    t.inputs.push_back({q8_scalar(dt, in.zp + off), true});
  }
  return t;
}

TEST(CpuQLinearConcat, MatchesRef) {
  std::mt19937 rng(kSeed);
  for (bool is_signed : {false, true}) {
    for (int64_t axis : {0, 1, 2, 3, -1}) {
      std::vector<CInput> ins;
      for (int i = 0; i < 3; ++i) {
        std::vector<int64_t> d = {2, 5, 3, 7};
        const size_t ax = static_cast<size_t>(axis < 0 ? 3 : axis);
        d[ax] = i == 1 ? 0 : i + 2;  // a zero-size input in the middle
        ins.push_back({d, i == 0 ? 0.02f : 0.013f * static_cast<float>(i + 1), i == 0 ? 128 : 100 + 20 * i});
      }
      const TypedNode t = concat_node(ins, axis, is_signed, 0.02f, 128, rng);
      auto g = t.build();
      auto op = backends::cpu::make_qlinear_concat(*g->nodes()[0], backends::CompileContext{});
      ASSERT_TRUE(op.ok() && *op) << "factory declined";
      for (int threads : {1, 3}) expect_ms_matches_ref(t, "concat axis " + std::to_string(axis), threads);
    }
    // Saturating: a wide input range squeezed into a narrow output scale, and extreme zero points.
    const TypedNode t = concat_node({{{1, 4, 9}, 0.5f, 0}, {{1, 3, 9}, 0.01f, 255}}, 1, is_signed, 0.02f, 255, rng);
    for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2Fma, kernels::Isa::kAvx512}) {
      if (!kernels::isa_supported(isa)) continue;
      kernels::ScopedIsaOverride force(isa);
      expect_ms_matches_ref(t, std::string("saturating concat on ") + kernels::isa_name(isa));
    }
  }
}

TypedNode gap_node(std::vector<int64_t> dims, bool is_signed, float xs, int64_t xz, float ys, int64_t yz,
                   std::mt19937& rng) {
  const ir::DType dt = is_signed ? ir::DType::kI8 : ir::DType::kU8;
  const int64_t off = is_signed ? -128 : 0;
  TypedNode t;
  t.op = "QLinearGlobalAveragePool";
  t.inputs = {{random_q8(dt, std::move(dims), rng), false}, f32_const(xs), {q8_scalar(dt, xz + off), true},
              f32_const(ys), {q8_scalar(dt, yz + off), true}};
  return t;
}

TEST(CpuQLinearGlobalAveragePool, MatchesRef) {
  std::mt19937 rng(kSeed);
  const std::vector<std::vector<int64_t>> shapes = {{1, 3, 7, 7},   {2, 17, 5, 3}, {1, 1280, 7, 7}, {1, 96, 56, 56},
                                                    {1, 5, 1, 1},   {1, 4, 131},   {1, 0, 3, 3},    {2, 3, 0, 4},
                                                    {1, 2, 300, 301}};
  for (bool is_signed : {false, true}) {
    for (const auto& d : shapes) {
      const TypedNode t = gap_node(d, is_signed, 0.02f, 131, 0.01f, 120, rng);
      auto g = t.build();
      auto op = backends::cpu::make_qlinear_pool(*g->nodes()[0], backends::CompileContext{});
      ASSERT_TRUE(op.ok() && *op) << "factory declined";
      for (int threads : {1, 3}) expect_ms_matches_ref(t, "gap " + ir::dims_to_string(d), threads);
    }
    // Requantization onto ties (m = 1, count 2: halves) and saturation (m = 50).
    expect_ms_matches_ref(gap_node({1, 64, 2, 1}, is_signed, 1.0f, 128, 1.0f, 128, rng), "gap ties");
    expect_ms_matches_ref(gap_node({1, 64, 3, 3}, is_signed, 1.0f, 0, 0.02f, 255, rng), "gap saturating");
    for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2Fma, kernels::Isa::kAvx512}) {
      if (!kernels::isa_supported(isa)) continue;
      kernels::ScopedIsaOverride force(isa);
      expect_ms_matches_ref(gap_node({2, 9, 13, 11}, is_signed, 0.02f, 131, 0.01f, 120, rng),
                            std::string("gap on ") + kernels::isa_name(isa));
    }
  }
}

// channels_last = 1 is not taken by the cpu factory (ref runs it); ref's NHWC result equals its
// NCHW result transposed.
TEST(CpuQLinearGlobalAveragePool, ChannelsLastOnRef) {
  std::mt19937 rng(kSeed);
  TypedNode nchw = gap_node({2, 3, 4, 5}, false, 0.02f, 131, 0.01f, 120, rng);
  TypedNode nhwc = nchw;
  nhwc.attrs.set("channels_last", int64_t{1});
  ir::Tensor x = ir::Tensor::allocate(ir::DType::kU8, {2, 4, 5, 3});
  const auto* src = static_cast<const uint8_t*>(nchw.inputs[0].tensor.raw());
  auto* dst = static_cast<uint8_t*>(x.raw());
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int i = 0; i < 20; ++i) dst[(n * 20 + i) * 3 + c] = src[(n * 3 + c) * 20 + i];
  nhwc.inputs[0].tensor = x;
  auto g = nhwc.build();
  auto op = backends::cpu::make_qlinear_pool(*g->nodes()[0], backends::CompileContext{});
  ASSERT_TRUE(op.ok());
  EXPECT_FALSE(*op);
  auto a = run_ms(nchw, "ref", 1);
  auto b = run_ms(nhwc, "ref", 1);
  ASSERT_TRUE(a.ok() && b.ok()) << (a.ok() ? b.status().to_string() : a.status().to_string());
  ASSERT_EQ((*b)[0].dims(), (std::vector<int64_t>{2, 1, 1, 3}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ((*a)[0].get_int(i), (*b)[0].get_int(i)) << i;
}

// MaxPool on u8 / i8 (what fuse_qdq_pool leaves) on cpu against ref, bit for bit: paddings,
// strides, ceil_mode, dilations (windows that lie wholly in the padding), SAME padding.
TEST(CpuQ8MaxPool, MatchesRef) {
  std::mt19937 rng(kSeed);
  struct P {
    std::vector<int64_t> k, s, pads, d;
    int64_t ceil = 0;
    std::string auto_pad;
    std::vector<int64_t> dims = {2, 5, 13, 10};
  };
  const std::vector<P> cases = {{{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, ""},
                                {{2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, ""},
                                {{3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1, ""},
                                {{3, 2}, {1, 2}, {2, 1, 2, 1}, {3, 2}, 0, ""},
                                {{3, 3}, {2, 2}, {}, {1, 1}, 0, "SAME_UPPER"},
                                // windows wholly in the padding (lowest value) and partly in it
                                {{2, 2}, {1, 1}, {4, 0, 4, 0}, {5, 1}, 0, "", {1, 3, 1, 6}},
                                {{2, 3}, {1, 2}, {4, 1, 4, 1}, {5, 2}, 1, "", {1, 3, 3, 7}},
                                // rows wide enough for the vector row steps, with partial tails
                                {{3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, "", {1, 3, 9, 112}},
                                {{3, 3}, {2, 2}, {0, 1, 0, 0}, {1, 1}, 1, "", {1, 2, 6, 77}},
                                {{3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 0, "", {1, 2, 5, 70}},
                                {{2, 4}, {1, 3}, {0, 2, 1, 2}, {1, 2}, 0, "", {1, 2, 4, 100}}};
  for (ir::DType dt : {ir::DType::kU8, ir::DType::kI8}) {
    for (const P& p : cases) {
      TypedNode t;
      t.op = "MaxPool";
      t.opset = 12;
      t.inputs = {{random_q8(dt, p.dims, rng), false}};
      t.attrs.set("kernel_shape", p.k);
      t.attrs.set("strides", p.s);
      if (!p.pads.empty()) t.attrs.set("pads", p.pads);
      t.attrs.set("dilations", p.d);
      t.attrs.set("ceil_mode", p.ceil);
      if (!p.auto_pad.empty()) t.attrs.set("auto_pad", p.auto_pad);
      auto g = t.build();
      auto op = backends::cpu::make_qlinear_pool(*g->nodes()[0], backends::CompileContext{});
      ASSERT_TRUE(op.ok() && *op) << "factory declined";
      for (int threads : {1, 3}) expect_typed_matches_ref(t, 0, "q8 MaxPool", threads);
    }
  }
}

// QLinearAveragePool's ref kernel against a direct double-precision evaluation of its definition
// (int sum, count per count_include_pad, one rounding): the values here keep (acc * m) / count
// far from .5 boundaries in f32, so double and f32 agree.
TEST(QLinearAveragePool, RefMatchesDefinition) {
  std::mt19937 rng(kSeed);
  for (int64_t include_pad : {0, 1}) {
    TypedNode t;
    t.op = "QLinearAveragePool";
    t.inputs = {{random_q8(ir::DType::kU8, {1, 2, 5, 6}, rng), false}, f32_const(0.5f),
                {q8_scalar(ir::DType::kU8, 100), true}, f32_const(0.5f), {q8_scalar(ir::DType::kU8, 110), true}};
    t.attrs.set("kernel_shape", std::vector<int64_t>{3, 3});
    t.attrs.set("pads", std::vector<int64_t>{1, 1, 1, 1});
    t.attrs.set("strides", std::vector<int64_t>{2, 2});
    t.attrs.set("count_include_pad", include_pad);
    auto got = run_ms(t, "cpu", 1);  // runs the ref kernel
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const ir::Tensor& y = (*got)[0];
    ASSERT_EQ(y.dims(), (std::vector<int64_t>{1, 2, 3, 3}));
    const auto* x = static_cast<const uint8_t*>(t.inputs[0].tensor.raw());
    for (int c = 0; c < 2; ++c) {
      for (int oy = 0; oy < 3; ++oy) {
        for (int ox = 0; ox < 3; ++ox) {
          int64_t acc = 0, count = 0;
          for (int ky = 0; ky < 3; ++ky) {
            for (int kx = 0; kx < 3; ++kx) {
              const int iy = oy * 2 - 1 + ky, ix = ox * 2 - 1 + kx;
              if (iy >= 0 && iy < 5 && ix >= 0 && ix < 6) {
                acc += x[(c * 5 + iy) * 6 + ix] - 100;
                ++count;
              } else if (include_pad) {
                ++count;
              }
            }
          }
          const double v = std::nearbyint(static_cast<double>(acc) / static_cast<double>(count)) + 110;
          const int64_t e = static_cast<int64_t>(std::min(255.0, std::max(0.0, v)));
          EXPECT_EQ(y.get_int((c * 3 + oy) * 3 + ox), e) << "c " << c << " oy " << oy << " ox " << ox;
        }
      }
    }
  }
}

}  // namespace
}  // namespace nfuse::cpu_test
