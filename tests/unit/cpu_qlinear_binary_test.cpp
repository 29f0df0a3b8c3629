// QLinearAdd / QLinearMul on the cpu backend (cpu_qlinear_binary.cpp, q8-vbinary kernels) against
// the ref kernels, bit for bit: u8 and s8, same shape, scalar on either side, per-channel
// [1,C,1,1], per-row [W], two-sided broadcasts ([N,C,1,1] + [N,1,H,W]), rank 0, zero-size,
// odd lengths, saturation and .5 ties, 1 and 3 threads, every ISA this CPU runs. Also checks the
// factory takes the node (not the reference fallback) and prints the speed against ref on
// 1x96x56x56 (the MobileNetV2 residual size). nfuse's 16-bit form (u16 / s16) likewise, on every ISA.
#include <array>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "backends/cpu/cpu_qlinear_ops.h"
#include "cpu_qlinear_ms_util.h"
#include "kernels/cpu_features.h"

namespace nfuse::cpu_test {
namespace {

struct BCase {
  std::vector<int64_t> a, b;
  bool is_signed = false, mul = false;
  float a_scale = 0.05f, b_scale = 0.03f, y_scale = 0.06f;
  int64_t a_zp = 120, b_zp = 131, y_zp = 125;
};

TypedNode make_node(const BCase& c, std::mt19937& rng) {
  const ir::DType dt = c.is_signed ? ir::DType::kI8 : ir::DType::kU8;
  const int64_t off = c.is_signed ? -128 : 0;
  TypedNode t;
  t.op = c.mul ? "QLinearMul" : "QLinearAdd";
  t.inputs = {{random_q8(dt, c.a, rng), false}, f32_const(c.a_scale),       {q8_scalar(dt, c.a_zp + off), true},
              {random_q8(dt, c.b, rng), false}, f32_const(c.b_scale),       {q8_scalar(dt, c.b_zp + off), true},
              f32_const(c.y_scale),             {q8_scalar(dt, c.y_zp + off), true}};
  return t;
}

std::string describe(const BCase& c) {
  std::ostringstream s;
  s << (c.mul ? "mul " : "add ") << ir::dims_to_string(c.a) << " x " << ir::dims_to_string(c.b)
    << (c.is_signed ? " s8" : " u8") << " scales " << c.a_scale << "," << c.b_scale << "," << c.y_scale;
  return s.str();
}

void check(const BCase& c, std::mt19937& rng) {
  const TypedNode t = make_node(c, rng);
  auto g = t.build();
  g->nodes()[0]->domain = "com.microsoft";
  auto op = backends::cpu::make_qlinear_binary(*g->nodes()[0], backends::CompileContext{});
  ASSERT_TRUE(op.ok() && *op) << describe(c) << ": the cpu factory declined";
  for (int threads : {1, 3}) expect_ms_matches_ref(t, describe(c), threads);
}

std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> shapes() {
  return {{{1, 3, 5, 7}, {1, 3, 5, 7}},  {{2, 16, 9, 9}, {2, 16, 9, 9}}, {{4099}, {4099}},
          {{1, 8, 6, 6}, {}},            {{}, {1, 8, 6, 6}},             {{1, 17, 5, 3}, {1, 17, 1, 1}},
          {{1, 17, 1, 1}, {1, 17, 5, 3}}, {{3, 7, 31}, {31}},             {{2, 5, 1, 1}, {2, 1, 4, 3}},
          {{2, 1, 4, 3}, {2, 5, 1, 1}},  {{}, {}},                       {{1, 0, 4}, {1, 0, 4}},
          {{1, 0, 4}, {4}},              {{5, 1}, {1, 6}},               {{1, 96, 56, 56}, {1, 96, 56, 56}}};
}

TEST(CpuQLinearBinary, MatchesRef) {
  std::mt19937 rng(kSeed);
  for (bool mul : {false, true}) {
    for (bool is_signed : {false, true}) {
      for (const auto& [a, b] : shapes()) {
        BCase c{a, b, is_signed, mul};
        if (mul) c.y_scale = 0.003f;
        check(c, rng);
      }
    }
  }
}

TEST(CpuQLinearBinary, SaturationTiesAndZeroPoints) {
  std::mt19937 rng(kSeed + 1);
  const std::vector<int64_t> s = {1, 3, 11, 13};
  for (bool is_signed : {false, true}) {
    check({s, s, is_signed, false, 1.0f, 1.0f, 0.01f}, rng);             // almost everything saturates
    check({s, s, is_signed, false, 0.5f, 0.5f, 1.0f, 128, 127, 128}, rng);  // (a' + b') / 2: ties
    check({s, {}, is_signed, false, 0.5f, 0.25f, 1.0f, 128, 127, 3}, rng);
    check({{}, s, is_signed, false, 0.5f, 0.25f, 1.0f, 128, 127, 3}, rng);  // swapped scalar form
    check({s, s, is_signed, false, 0.05f, 0.03f, 0.06f, 0, 255, 255}, rng);
    check({s, s, is_signed, true, 0.5f, 0.5f, 0.25f, 0, 255, 0}, rng);
    check({s, s, is_signed, true, 0.01f, 0.01f, 1.0f, 128, 128, 128}, rng);  // products on .5
  }
}

TEST(CpuQLinearBinary, EveryIsa) {
  std::mt19937 rng(kSeed + 2);
  for (kernels::Isa isa : {kernels::Isa::kScalar, kernels::Isa::kAvx2Fma, kernels::Isa::kAvx512}) {
    if (!kernels::isa_supported(isa)) continue;
    kernels::ScopedIsaOverride force(isa);
    for (bool mul : {false, true}) {
      check({{1, 24, 7, 9}, {1, 24, 7, 9}, false, mul, 0.05f, 0.03f, mul ? 0.003f : 0.06f}, rng);
      check({{1, 24, 7, 9}, {1, 24, 1, 1}, true, mul, 0.05f, 0.03f, mul ? 0.003f : 0.06f}, rng);
      check({{}, {1, 24, 7, 9}, true, mul, 0.05f, 0.03f, mul ? 0.003f : 0.06f}, rng);
    }
  }
}

// Non-finite multipliers, non-constant scales and mixed dtypes leave the node to ref.
TEST(CpuQLinearBinary, FactoryDeclines) {
  std::mt19937 rng(kSeed + 3);
  BCase c{{1, 4}, {1, 4}};
  c.y_scale = 1e-45f;  // a_scale / y_scale overflows to inf
  TypedNode t = make_node(c, rng);
  auto g = t.build();
  auto op = backends::cpu::make_qlinear_binary(*g->nodes()[0], backends::CompileContext{});
  ASSERT_TRUE(op.ok());
  EXPECT_FALSE(*op);
  expect_ms_matches_ref(t, "infinite multiplier (both run ref)");
  t = make_node(BCase{{1, 4}, {1, 4}}, rng);
  t.inputs[1].constant = false;
  g = t.build();
  op = backends::cpu::make_qlinear_binary(*g->nodes()[0], backends::CompileContext{});
  ASSERT_TRUE(op.ok());
  EXPECT_FALSE(*op);
}

// nfuse's 16-bit form: u16 / s16 codes, the QDQ graph's arithmetic (dequantize both, add or
// multiply in f32, quantize), on the q-dequant and f32-qvcvt kernels in pieces of 1024.
struct WideCase {
  std::vector<int64_t> a, b;
  bool is_signed = false, mul = false;
  float a_scale = 0.0002f, b_scale = 0.00013f, y_scale = 0.00031f;
  int64_t a_zp = 30000, b_zp = 33000, y_zp = 32000;  // u16; s16 takes them less 32768
};

ir::Tensor random_q16(ir::DType dt, std::vector<int64_t> dims, std::mt19937& rng) {
  ir::Tensor t = ir::Tensor::allocate(dt, std::move(dims));
  std::uniform_int_distribution<int> d(0, 65535);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint16_t*>(t.raw())[i] = static_cast<uint16_t>(d(rng));
  return t;
}

Operand q16_scalar(ir::DType dt, int64_t v) {
  ir::Tensor t = ir::Tensor::allocate(dt, {});
  static_cast<uint16_t*>(t.raw())[0] = static_cast<uint16_t>(v);
  return {std::move(t), true};
}

void check_wide(const WideCase& c, std::mt19937& rng) {
  const ir::DType dt = c.is_signed ? ir::DType::kI16 : ir::DType::kU16;
  const int64_t off = c.is_signed ? -32768 : 0;
  TypedNode t;
  t.op = c.mul ? "QLinearMul" : "QLinearAdd";
  t.inputs = {{random_q16(dt, c.a, rng), false},
              f32_const(c.a_scale),
              q16_scalar(dt, c.a_zp + off),
              {random_q16(dt, c.b, rng), false},
              f32_const(c.b_scale),
              q16_scalar(dt, c.b_zp + off),
              f32_const(c.y_scale),
              q16_scalar(dt, c.y_zp + off)};
  std::ostringstream what;
  what << (c.mul ? "mul " : "add ") << ir::dims_to_string(c.a) << " x " << ir::dims_to_string(c.b)
       << (c.is_signed ? " s16" : " u16") << " scales " << c.a_scale << "," << c.b_scale << "," << c.y_scale;
  auto g = t.build();
  g->nodes()[0]->domain = "com.microsoft";
  auto op = backends::cpu::make_qlinear_binary(*g->nodes()[0], backends::CompileContext{});
  ASSERT_TRUE(op.ok() && *op) << what.str() << ": the cpu factory declined";
  for (int threads : {1, 3}) expect_ms_matches_ref(t, what.str(), threads);
}

TEST(CpuQLinearBinary, SixteenBitMatchesRef) {
  std::mt19937 rng(kSeed + 4);
  // Pieces of 1024 and tasks of 16384 elements: runs shorter than, equal to and straddling both.
  const std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> wide_shapes = {
      {{1, 3, 5, 7}, {1, 3, 5, 7}},    {{1024}, {1024}},   {{20000}, {20000}},    {{1, 5, 97, 101}, {1, 5, 1, 1}},
      {{1, 5, 1, 1}, {1, 5, 97, 101}}, {{1, 8, 6, 6}, {}}, {{}, {1, 8, 6, 6}},    {{2, 5, 1, 1}, {2, 1, 4, 3}},
      {{3, 7, 1031}, {1031}},          {{}, {}},           {{1, 0, 4}, {1, 0, 4}}};
  for (int isa_i = 0; isa_i < 3; ++isa_i) {
    const kernels::Isa isa = std::array{kernels::Isa::kScalar, kernels::Isa::kAvx2Fma, kernels::Isa::kAvx512}[isa_i];
    if (!kernels::isa_supported(isa)) continue;
    kernels::ScopedIsaOverride force(isa);
    for (bool mul : {false, true}) {
      for (bool is_signed : {false, true}) {
        for (const auto& [a, b] : wide_shapes) {
          WideCase c{a, b, is_signed, mul};
          if (mul) c.y_scale = 0.0009f;
          check_wide(c, rng);
        }
      }
    }
  }
  // Saturation both ways, and .5 ties (scales of powers of two: the f32 sums are exact).
  for (bool is_signed : {false, true}) {
    check_wide({{1, 3, 33, 35}, {1, 3, 33, 35}, is_signed, false, 1.0f, 1.0f, 0.01f}, rng);
    check_wide({{1, 3, 33, 35}, {1, 3, 33, 35}, is_signed, false, 0.5f, 0.5f, 1.0f, 32768, 32767, 32768}, rng);
    check_wide({{1, 3, 33, 35}, {1, 3, 1, 1}, is_signed, true, 0.5f, 0.5f, 0.25f, 32768, 32768, 0}, rng);
  }
}

TEST(CpuQLinearBinary, SpeedVsRef) {
  std::mt19937 rng(kSeed);
  const TypedNode t = make_node({{1, 96, 56, 56}, {1, 96, 56, 56}}, rng);
  auto time_backend = [&](const std::string& backend, int threads, int reps) {
    auto g = t.build();
    g->nodes()[0]->domain = "com.microsoft";
    g->opsets["com.microsoft"] = 1;
    runtime::SessionOptions o;
    o.backend = backend;
    o.threads = threads;
    auto s = runtime::Session::create(std::move(g), o);
    EXPECT_TRUE(s.ok());
    runtime::NamedTensors feeds = {{"in0", t.inputs[0].tensor}, {"in3", t.inputs[3].tensor}};
    (void)(*s)->run(feeds);
    double best = 1e30;
    for (int r = 0; r < reps; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      auto out = (*s)->run(feeds);
      const double dt = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      EXPECT_TRUE(out.ok());
      best = std::min(best, dt);
    }
    return best;
  };
  const double ref_us = time_backend("ref", 1, 3);
  const double cpu_us = time_backend("cpu", 1, 20);
  const double cpu2_us = time_backend("cpu", 2, 20);
  std::printf("QLinearAdd u8 1x96x56x56 (%s): ref %.0f us, cpu 1 thread %.1f us (%.0fx), cpu 2 threads %.1f us\n",
              kernels::isa_name(kernels::selected_isa()), ref_us, cpu_us, ref_us / cpu_us, cpu2_us);
  EXPECT_LT(cpu_us, ref_us);
}

}  // namespace
}  // namespace nfuse::cpu_test
