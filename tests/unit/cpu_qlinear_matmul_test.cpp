// QLinearMatMul on the cpu backend (cpu_qlinear_matmul.cpp, the qu8 GEMM) against the ref
// kernel, bit for bit: u8/s8 A and outputs, per-tensor/per-column B scales, zero points at both
// ends, saturation, batched A, threads, every GEMM configuration this CPU runs.
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <sstream>

#include "backends/cpu/cpu_op.h"
#include "cpu_typed_node.h"
#include "kernels/cpu_features.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::cpu_test {
namespace {

struct MCase {
  std::vector<int64_t> a_dims = {7, 16};  // [..., M, K]
  int64_t n = 24;
  bool a_signed = false, y_signed = false, per_column = false;
  int64_t a_zp = 128, y_zp = 128;
  float saturate = 1.0f;
};

std::string describe(const MCase& c) {
  std::ostringstream s;
  s << ir::dims_to_string(c.a_dims) << " x " << c.a_dims.back() << "x" << c.n << (c.a_signed ? " a:s8" : " a:u8")
    << (c.y_signed ? " y:s8" : " y:u8") << (c.per_column ? " per-column" : " per-tensor") << " a_zp " << c.a_zp
    << " y_zp " << c.y_zp << " sat " << c.saturate;
  return s.str();
}

ir::Tensor q8(ir::DType dt, std::vector<int64_t> dims, std::mt19937& rng) {
  ir::Tensor t = ir::Tensor::allocate(dt, std::move(dims));
  std::uniform_int_distribution<int> d(0, 255);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(d(rng));
  return t;
}

ir::Tensor scalar_q8(bool is_signed, int64_t v) {
  ir::Tensor t = ir::Tensor::allocate(is_signed ? ir::DType::kI8 : ir::DType::kU8, {});
  static_cast<uint8_t*>(t.raw())[0] = static_cast<uint8_t>(v);
  return t;
}

void check(const MCase& c, std::mt19937& rng, int threads = 1) {
  const int64_t k = c.a_dims.back();
  std::uniform_real_distribution<float> ws(0.004f, 0.02f);
  std::vector<float> b_scales(static_cast<size_t>(c.per_column ? c.n : 1));
  for (float& s : b_scales) s = ws(rng);
  const float a_scale = 0.011f;
  const float y_scale = a_scale * b_scales[0] * 74.0f * std::sqrt(static_cast<float>(k)) * 2.0f / c.saturate;
  TypedNode t;
  t.op = "QLinearMatMul";
  t.opset = 10;
  t.inputs.push_back({q8(c.a_signed ? ir::DType::kI8 : ir::DType::kU8, c.a_dims, rng), false});
  t.inputs.push_back({ir::Tensor::from_vector<float>({a_scale}, {}), true});
  t.inputs.push_back({scalar_q8(c.a_signed, c.a_zp), true});
  t.inputs.push_back({q8(ir::DType::kI8, {k, c.n}, rng), true});
  t.inputs.push_back({ir::Tensor::from_vector<float>(b_scales, {static_cast<int64_t>(b_scales.size())}), true});
  t.inputs.push_back({ir::Tensor::from_vector<int8_t>({0}, {}), true});
  t.inputs.push_back({ir::Tensor::from_vector<float>({y_scale}, {}), true});
  t.inputs.push_back({scalar_q8(c.y_signed, c.y_zp), true});
  auto g = t.build();
  auto op = backends::cpu::make_qlinear_matmul(*g->nodes()[0], backends::CompileContext{});
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  ASSERT_NE(*op, nullptr) << describe(c) << ": fell back to the reference kernel";
  expect_typed_matches_ref(t, k, describe(c), threads);
}

TEST(CpuQLinearMatMul, Shapes) {
  std::mt19937 rng(kSeed);
  for (int64_t m : {1, 3, 8, 17, 33})
    for (int64_t k : {1, 3, 16, 65, 300})
      for (int64_t n : {1, 8, 17, 64}) check({.a_dims = {m, k}, .n = n, .per_column = n % 2 == 0}, rng);
}

TEST(CpuQLinearMatMul, ZeroPointsSaturationAndTypes) {
  std::mt19937 rng(kSeed + 1);
  for (int64_t az : {0, 128, 255})
    for (int64_t yz : {0, 128, 255}) {
      check({.a_dims = {19, 40}, .n = 33, .a_zp = az, .y_zp = yz, .saturate = 16.0f}, rng);
      check({.a_dims = {19, 40}, .n = 33, .a_signed = true, .y_signed = true, .per_column = true, .a_zp = az - 128,
             .y_zp = yz - 128, .saturate = 16.0f},
            rng);
      check({.a_dims = {5, 40}, .n = 9, .a_signed = true, .a_zp = az - 128, .y_zp = yz}, rng);
      check({.a_dims = {5, 40}, .n = 9, .y_signed = true, .a_zp = az, .y_zp = yz - 128}, rng);
    }
}

TEST(CpuQLinearMatMul, BatchedAndThreads) {
  std::mt19937 rng(kSeed + 2);
  for (int threads : {1, 2, 3}) {
    check({.a_dims = {2, 3, 50, 64}, .n = 96, .per_column = true}, rng, threads);
    check({.a_dims = {2, 129, 33}, .n = 40, .a_signed = true, .a_zp = -7}, rng, threads);
  }
}

TEST(CpuQLinearMatMul, EveryKernelConfig) {
  for (const kernels::Qu8GemmConfig* cfg : kernels::qu8_gemm_configs()) {
    SCOPED_TRACE(cfg->name);
    kernels::ScopedIsaOverride isa(cfg->isa);
    std::mt19937 rng(kSeed + 3);
    check({.a_dims = {37, 70}, .n = 45, .per_column = true, .a_zp = 255, .y_zp = 0, .saturate = 8.0f}, rng, 2);
    check({.a_dims = {2, 9, 70}, .n = 33, .a_signed = true, .y_signed = true, .a_zp = 127, .y_zp = -128}, rng);
  }
}

}  // namespace
}  // namespace nfuse::cpu_test
