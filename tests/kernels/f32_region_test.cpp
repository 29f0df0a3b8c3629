// f32_region.h: the steps region_program fuses (Mul-Add, and HardSwish's Add-Clip-Mul-Div) give,
// on every ISA this CPU runs, the bits of the unfused steps run one by one on the scalar kernel:
// random values, values whose Add or Mul rounds, +-inf, NaN, -0, denormals, lengths 0..67 and
// 1000. A step whose intermediate another step also reads is not fused.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels/f32-region/f32_region.h"
#include "support/kernel_isas.h"

namespace nfuse::kernels {
namespace {

struct Program {
  std::vector<std::string> ops;
  std::vector<int64_t> operands;
  std::vector<float> params;
};

// x * Clip(x * k + 3, 0, 6) / 6, then * a + b: equalization's Mul opening a written-out HardSwish
// and the learnable affine after it (PaddleOCR's), then the reciprocal a caller multiplies by.
// Constants: k, 3, 6, a, b.
Program hardswish_affine() {
  return {{"Mul", "Add", "Clip", "Mul", "Div", "Mul", "Add"},
          {0, -1, 1, -2, 2, 0, 1, 3, 4, -3, 5, -4, -5, 6},
          {0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0}};
}

// The unfused steps, built directly (region_program would fuse them).
std::vector<RegionStep> unfused(const Program& p) {
  std::vector<RegionStep> steps;
  for (size_t i = 0; i < p.ops.size(); ++i) {
    RegionStep s;
    EXPECT_TRUE(region_op_from_name(p.ops[i], &s.op));
    s.a = static_cast<int32_t>(p.operands[2 * i]);
    s.b = static_cast<int32_t>(p.operands[2 * i + 1]);
    s.p0 = p.params[2 * i];
    s.p1 = p.params[2 * i + 1];
    steps.push_back(s);
  }
  return steps;
}

std::vector<float> run(RegionEvalFn eval, const std::vector<RegionStep>& steps, const float* consts,
                       const std::vector<float>& x) {
  std::vector<std::vector<float>> buffers(steps.size() + 1, std::vector<float>(x.size() + 1, 0.0f));
  buffers[0].assign(x.begin(), x.end());
  std::vector<float*> slots;
  for (auto& b : buffers) slots.push_back(b.data());
  eval(steps.data(), steps.size(), consts, slots.data(), x.size());
  return std::vector<float>(buffers.back().begin(), buffers.back().begin() + static_cast<ptrdiff_t>(x.size()));
}

std::vector<float> inputs(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> wide(-12.0f, 12.0f);
  const float specials[] = {std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            -0.0f,
                            1e-40f,
                            -3.0f,
                            3e38f,
                            -2.9999998f};
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = i % 5 == 4 ? specials[(i / 5) % 8] : wide(rng);
  return x;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

TEST(F32Region, FusedStepsMatchTheUnfusedOnes) {
  const Program p = hardswish_affine();
  std::vector<RegionStep> fused;
  std::string error;
  ASSERT_TRUE(region_program(p.ops, p.operands, p.params, 5, &fused, &error)) << error;
  ASSERT_EQ(fused.size(), p.ops.size());  // slots keep their numbers: fused-away steps are kNop
  int nops = 0, mul_add = 0, hardswish = 0;
  for (const RegionStep& s : fused) {
    nops += s.op == RegionOp::kNop ? 1 : 0;
    mul_add += s.op == RegionOp::kMulAdd ? 1 : 0;
    hardswish += s.op == RegionOp::kAddClipMulDiv ? 1 : 0;
  }
  EXPECT_EQ(hardswish, 1);
  EXPECT_EQ(mul_add, 1);
  EXPECT_EQ(nops, 4);
  const std::vector<RegionStep> plain = unfused(p);
  std::mt19937 rng(41);
  // k rounds x * k; 1/3 and 0.1 make the Div and the affine round.
  const float consts[][5] = {{0.7f, 3.0f, 6.0f, 1.3f, -0.1f}, {3.0f, 3.0f, 6.0f, 0.1f, 1.0f / 3.0f}};
  for (Isa isa : test::available_isas()) {
    SCOPED_TRACE(isa_name(isa));
    const RegionEvalFn eval = region_eval_select(isa);
    for (const auto& c : consts) {
      for (size_t n : {0, 1, 7, 15, 16, 17, 31, 33, 67, 1000}) {
        const std::vector<float> x = inputs(n, rng);
        EXPECT_TRUE(same_bits(run(eval, fused, c, x), run(region_eval__scalar, plain, c, x))) << "n " << n;
      }
    }
  }
}

TEST(F32Region, IntermediatesReadElsewhereStayUnfused) {
  // The Clip's result is also added to the output: the HardSwish run cannot fuse; the Mul-Add can
  // (its Mul result feeds only the Add).
  const Program p = {{"Add", "Clip", "Mul", "Div", "Add", "Mul", "Add"},
                     {0, -1, 1, 0, 0, 2, 3, -2, 4, 2, 5, -3, 6, -1},
                     {0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}};
  std::vector<RegionStep> steps;
  std::string error;
  ASSERT_TRUE(region_program(p.ops, p.operands, p.params, 3, &steps, &error)) << error;
  for (size_t i = 0; i < 4; ++i) EXPECT_EQ(steps[i].op, unfused(p)[i].op) << i;
  EXPECT_EQ(steps[5].op, RegionOp::kNop);
  EXPECT_EQ(steps[6].op, RegionOp::kMulAdd);
  const float c[] = {3.0f, 6.0f, 0.5f};
  std::mt19937 rng(43);
  const std::vector<float> x = inputs(100, rng);
  for (Isa isa : test::available_isas()) {
    EXPECT_TRUE(same_bits(run(region_eval_select(isa), steps, c, x), run(region_eval__scalar, unfused(p), c, x)))
        << isa_name(isa);
  }
}

// Random programs (binary and unary steps over random earlier slots and constants, with
// HardSwish and Mul-Add runs planted at random places, some of whose intermediates later steps
// read again): whatever region_program fuses, every ISA gives the unfused steps' bits.
TEST(F32Region, RandomProgramsFuseToTheSameBits) {
  std::mt19937 rng(47);
  const char* simple[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Clip", "Relu", "Neg", "Abs"};
  int fused_runs = 0;
  for (int trial = 0; trial < 300; ++trial) {
    Program p;
    const int constants = 4;
    auto slot = [&](int steps) { return static_cast<int64_t>(std::uniform_int_distribution<int>(0, steps)(rng)); };
    auto constant = [&] { return -static_cast<int64_t>(std::uniform_int_distribution<int>(1, constants)(rng)); };
    auto add = [&](const char* op, int64_t a, int64_t b, float p0, float p1) {
      p.ops.push_back(op);
      p.operands.insert(p.operands.end(), {a, b});
      p.params.insert(p.params.end(), {p0, p1});
      return static_cast<int64_t>(p.ops.size());
    };
    const int length = std::uniform_int_distribution<int>(1, 12)(rng);
    while (static_cast<int>(p.ops.size()) < length) {
      const int n = static_cast<int>(p.ops.size());
      const int kind = std::uniform_int_distribution<int>(0, 5)(rng);
      if (kind == 0) {  // x * Clip(x + B, lo, hi) / C
        const int64_t x = slot(n);
        const int64_t t = add("Add", x, constant(), 0, 0);
        const int64_t c = add("Clip", t, 0, -1.0f, 6.0f);
        const int64_t m = rng() % 2 ? add("Mul", x, c, 0, 0) : add("Mul", c, x, 0, 0);
        add("Div", m, constant(), 0, 0);
      } else if (kind == 1) {  // x * B + C, either operand order
        const int64_t m = rng() % 2 ? add("Mul", slot(n), constant(), 0, 0) : add("Mul", constant(), slot(n), 0, 0);
        rng() % 2 ? add("Add", m, constant(), 0, 0) : add("Add", constant(), m, 0, 0);
      } else {
        const char* op = simple[rng() % 10];
        RegionOp k{};
        region_op_from_name(op, &k);
        const bool binary = region_op_is_binary(k);
        const int64_t a = slot(n);
        const int64_t b = binary && rng() % 2 ? constant() : slot(n);
        add(op, a, binary ? b : 0, -2.0f, 3.0f);
      }
    }
    std::vector<RegionStep> fused;
    std::string error;
    ASSERT_TRUE(region_program(p.ops, p.operands, p.params, constants, &fused, &error)) << error;
    for (const RegionStep& st : fused) fused_runs += st.op == RegionOp::kMulAdd || st.op == RegionOp::kAddClipMulDiv;
    const float c[constants] = {3.0f, 6.0f, 0.1f, -1.0f / 3.0f};
    const std::vector<float> x = inputs(37, rng);
    const std::vector<float> expect = run(region_eval__scalar, unfused(p), c, x);
    for (Isa isa : test::available_isas()) {
      ASSERT_TRUE(same_bits(run(region_eval_select(isa), fused, c, x), expect))
          << "trial " << trial << " on " << isa_name(isa);
    }
  }
  EXPECT_GT(fused_runs, 100);  // the generator does exercise the fusions
}

}  // namespace
}  // namespace nfuse::kernels
