// QLinearConv on the cpu backend (cpu_qlinear_conv.cpp, the qu8 GEMM) against the ref kernel:
// bit for bit on every case (u8/s8 activations and outputs, per-tensor/per-channel scales,
// zero points at both ends, saturation, strides, pads, dilation, groups, depthwise, batch,
// threads, every GEMM configuration this CPU runs; the W * X path and the depthwise f32 path).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cmath>
#include <random>
#include <sstream>

#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_op.h"
#include "cpu_typed_node.h"
#include "kernels/cpu_features.h"
#include "kernels/qu8-gemm/qu8_gemm.h"

namespace nfuse::cpu_test {
namespace {

struct QCase {
  int64_t n = 1, c = 8, h = 9, w = 9, co = 8, k = 3;
  int64_t stride = 1, pad = 0, dil = 1, group = 1;
  bool x_signed = false, y_signed = false, per_channel = false, bias = true;
  int64_t x_zp = 128, y_zp = 128;
  float saturate = 1.0f;  // > 1 shrinks y_scale so that outputs clip at both ends
  std::vector<int64_t> pads = {};  // ONNX pads (top, left, bottom, right) instead of `pad` on every side
  std::vector<int64_t> strides = {};  // (sh, sw) instead of `stride` on both axes
  // nfuse.QLinearConvRegion instead: "hardswish" (equalization's per-channel Mul, then
  // x * Clip(x + 3, 0, 6) / 6) or "sigmoid".
  std::string region = "";
};

std::string describe(const QCase& c) {
  std::ostringstream s;
  s << "n" << c.n << " c" << c.c << " " << c.h << "x" << c.w << " co" << c.co << " k" << c.k << " s" << c.stride << " p"
    << c.pad << " d" << c.dil << " g" << c.group << (c.x_signed ? " x:s8" : " x:u8") << (c.y_signed ? " y:s8" : " y:u8")
    << (c.per_channel ? " per-channel" : " per-tensor") << " x_zp " << c.x_zp << " y_zp " << c.y_zp
    << (c.bias ? " bias" : "") << " sat " << c.saturate << " " << c.region;
  for (int64_t p : c.pads) s << " pads " << p;
  for (int64_t v : c.strides) s << " strides " << v;
  return s.str();
}

ir::Tensor q8(bool is_signed, std::vector<int64_t> dims, std::mt19937& rng) {
  ir::Tensor t = ir::Tensor::allocate(is_signed ? ir::DType::kI8 : ir::DType::kU8, std::move(dims));
  std::uniform_int_distribution<int> d(0, 255);
  for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(d(rng));
  return t;
}

ir::Tensor scalar_q8(bool is_signed, int64_t v) {
  ir::Tensor t = ir::Tensor::allocate(is_signed ? ir::DType::kI8 : ir::DType::kU8, {});
  if (is_signed) t.data<int8_t>()[0] = static_cast<int8_t>(v);
  else t.data<uint8_t>()[0] = static_cast<uint8_t>(v);
  return t;
}

TypedNode build(const QCase& c, std::mt19937& rng) {
  const int64_t kk = c.c / c.group * c.k * c.k;
  std::uniform_real_distribution<float> ws(0.004f, 0.02f);
  const float x_scale = 0.0173f;
  std::vector<float> w_scales(static_cast<size_t>(c.per_channel ? c.co : 1));
  for (float& s : w_scales) s = ws(rng);
  // Typical |acc| ~ 128 * 74 * sqrt(K): map about 2 sigma onto the output range.
  const float y_scale = x_scale * w_scales[0] * 74.0f * std::sqrt(static_cast<float>(kk)) * 2.0f / c.saturate;
  TypedNode t;
  t.op = "QLinearConv";
  t.opset = 10;
  t.inputs.push_back({q8(c.x_signed, {c.n, c.c, c.h, c.w}, rng), false});
  t.inputs.push_back({ir::Tensor::from_vector<float>({x_scale}, {}), true});
  t.inputs.push_back({scalar_q8(c.x_signed, c.x_zp), true});
  t.inputs.push_back({q8(true, {c.co, c.c / c.group, c.k, c.k}, rng), true});
  t.inputs.push_back({ir::Tensor::from_vector<float>(w_scales, {static_cast<int64_t>(w_scales.size())}), true});
  t.inputs.push_back({ir::Tensor::from_vector<int8_t>(std::vector<int8_t>(w_scales.size(), 0),
                                                      {static_cast<int64_t>(w_scales.size())}),
                      true});
  t.inputs.push_back({ir::Tensor::from_vector<float>({y_scale}, {}), true});
  t.inputs.push_back({scalar_q8(c.y_signed, c.y_zp), true});
  if (c.bias || !c.region.empty()) {  // the region op's B is required: zeros stand for none
    std::uniform_int_distribution<int32_t> bd(static_cast<int32_t>(-kk * 3000), static_cast<int32_t>(kk * 3000));
    std::vector<int32_t> b(static_cast<size_t>(c.co));
    for (int32_t& v : b) v = c.bias ? bd(rng) : 0;
    t.inputs.push_back({ir::Tensor::from_vector<int32_t>(b, {c.co}), true});
  }
  if (c.region == "hardswish") {
    t.op = "QLinearConvRegion";
    t.domain = "nfuse";
    std::uniform_real_distribution<float> eq(0.25f, 4.0f);
    std::vector<float> per_channel(static_cast<size_t>(c.co));
    for (float& v : per_channel) v = eq(rng);
    t.inputs.push_back({ir::Tensor::from_vector<float>(per_channel, {c.co}), true});
    t.inputs.push_back({ir::Tensor::from_vector<float>({3.0f}, {1}), true});
    t.inputs.push_back({ir::Tensor::from_vector<float>({6.0f}, {1}), true});
    t.attrs.set("ops", std::vector<std::string>{"Mul", "Add", "Clip", "Mul", "Div"});
    t.attrs.set("operands", std::vector<int64_t>{0, -1, 1, -2, 2, 0, 1, 3, 4, -3});
    t.attrs.set("params", std::vector<float>{0, 0, 0, 0, 0, 6, 0, 0, 0, 0});
  } else if (c.region == "sigmoid") {
    t.op = "QLinearConvRegion";
    t.domain = "nfuse";
    t.inputs[6].tensor.data<float>()[0] = 1.0f / 255.0f;  // y in [0, 1]
    t.attrs.set("ops", std::vector<std::string>{"Sigmoid"});
    t.attrs.set("operands", std::vector<int64_t>{0, 0});
    t.attrs.set("params", std::vector<float>{0, 0});
  }
  t.attrs.set("kernel_shape", std::vector<int64_t>{c.k, c.k});
  t.attrs.set("strides", c.strides.empty() ? std::vector<int64_t>{c.stride, c.stride} : c.strides);
  t.attrs.set("pads", c.pads.empty() ? std::vector<int64_t>{c.pad, c.pad, c.pad, c.pad} : c.pads);
  t.attrs.set("dilations", std::vector<int64_t>{c.dil, c.dil});
  t.attrs.set("group", c.group);
  return t;
}

void check(const QCase& c, std::mt19937& rng, int threads = 1) {
  const TypedNode t = build(c, rng);
  // The optimized op must take the node (not the reference fallback).
  auto g = t.build();
  const ir::Node* node = g->nodes()[0].get();
  auto op = c.region.empty() ? backends::cpu::make_qlinear_conv(*node, backends::CompileContext{})
                             : backends::cpu::make_qlinear_conv_region(*node, backends::CompileContext{});
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  ASSERT_NE(*op, nullptr) << describe(c) << ": fell back to the reference kernel";
  expect_typed_matches_ref(t, c.c / c.group * c.k * c.k, describe(c), threads);
}

TEST(CpuQLinearConv, ChannelsAndKernels) {
  std::mt19937 rng(kSeed);
  for (int64_t ch : {1, 3, 8, 17, 33, 64})
    for (int64_t k : {1, 3, 5}) {
      check({.c = ch, .h = 11, .w = 10, .co = ch == 1 ? 5 : ch, .k = k, .pad = k / 2}, rng);
      check({.c = ch, .h = 12, .w = 9, .co = 17, .k = k, .stride = 2, .x_signed = true, .y_signed = true,
             .per_channel = true, .x_zp = -3, .y_zp = 5},
            rng);
    }
}

TEST(CpuQLinearConv, PointwiseDirect) {
  std::mt19937 rng(kSeed + 1);
  for (int64_t ch : {1, 3, 8, 17, 33, 64}) {
    check({.c = ch, .h = 7, .w = 9, .co = 33, .k = 1}, rng);
    check({.c = ch, .h = 14, .w = 14, .co = 64, .k = 1, .per_channel = true, .bias = false, .x_zp = 0}, rng);
    check({.c = ch, .h = 5, .w = 6, .co = 8, .k = 1, .stride = 2, .x_signed = true, .x_zp = 0}, rng);
    check({.c = ch, .h = 5, .w = 6, .co = 8, .k = 1, .pad = 1, .y_signed = true, .y_zp = -128}, rng);
  }
}

TEST(CpuQLinearConv, ZeroPointsAndSaturation) {
  std::mt19937 rng(kSeed + 2);
  for (int64_t xz : {0, 128, 255})
    for (int64_t yz : {0, 128, 255})
      for (float sat : {1.0f, 16.0f}) {
        check({.c = 17, .h = 8, .w = 8, .co = 19, .k = 3, .pad = 1, .per_channel = yz == 128, .x_zp = xz, .y_zp = yz,
               .saturate = sat},
              rng);
      }
  for (int64_t xz : {-128, 0, 127})
    for (int64_t yz : {-128, 0, 127}) {
      check({.c = 9, .h = 7, .w = 8, .co = 21, .k = 3, .pad = 2, .x_signed = true, .y_signed = true,
             .per_channel = true, .x_zp = xz, .y_zp = yz, .saturate = 16.0f},
            rng);
      // Mixed: s8 in, u8 out and back.
      check({.c = 9, .h = 7, .w = 8, .co = 8, .k = 1, .x_signed = true, .x_zp = xz, .y_zp = yz + 128}, rng);
      check({.c = 9, .h = 7, .w = 8, .co = 8, .k = 3, .y_signed = true, .x_zp = xz + 128, .y_zp = yz}, rng);
    }
}

TEST(CpuQLinearConv, StridesPadsDilation) {
  std::mt19937 rng(kSeed + 3);
  for (int64_t s : {1, 2})
    for (int64_t p : {0, 1, 2})
      for (int64_t d : {1, 2}) {
        check({.c = 8, .h = 13, .w = 11, .co = 16, .k = 3, .stride = s, .pad = p, .dil = d}, rng);
        check({.c = 3, .h = 15, .w = 16, .co = 24, .k = 5, .stride = s, .pad = p, .dil = d, .x_signed = true,
               .per_channel = true, .x_zp = 7},
              rng);
      }
}

TEST(CpuQLinearConv, GroupsAndDepthwise) {
  std::mt19937 rng(kSeed + 4);
  check({.c = 16, .h = 9, .w = 9, .co = 32, .k = 3, .pad = 1, .group = 4}, rng);
  check({.c = 33, .h = 8, .w = 7, .co = 33, .k = 3, .stride = 2, .pad = 1, .group = 3, .per_channel = true}, rng);
  for (int64_t ch : {1, 3, 8, 17, 64}) {
    check({.c = ch, .h = 10, .w = 9, .co = ch, .k = 3, .pad = 1, .group = ch, .per_channel = true}, rng);
    check({.c = ch, .h = 10, .w = 9, .co = 2 * ch, .k = 5, .stride = 2, .pad = 2, .group = ch, .x_signed = true,
           .y_signed = true, .x_zp = -128, .y_zp = 127},
          rng);
    check({.c = ch, .h = 6, .w = 70, .co = ch, .k = 3, .stride = 1, .pad = 1, .dil = 2, .group = ch, .x_zp = 255,
           .y_zp = 0, .saturate = 16.0f},
          rng);
    check({.c = ch, .h = 7, .w = 133, .co = 3 * ch, .k = 5, .stride = 3, .pad = 2, .group = ch, .x_signed = true,
           .per_channel = true, .bias = false, .x_zp = 127, .y_zp = 3, .saturate = 16.0f},
          rng);
  }
  // 3x3 stride 1 / 2 (the direct qu8-dwconv kernel where the CPU has it): wide rows with partial
  // 16-pixel tails, asymmetric and no padding, s8 in and out, channel multiplier 2, saturation.
  for (int64_t ch : {1, 5}) {
    check({.c = ch, .h = 9, .w = 57, .co = ch, .k = 3, .stride = 2, .group = ch, .x_signed = true, .y_signed = true,
           .per_channel = true, .x_zp = -7, .y_zp = 9, .saturate = 8.0f, .pads = {1, 0, 1, 1}},
          rng);
    check({.c = ch, .h = 6, .w = 40, .co = 2 * ch, .k = 3, .stride = 1, .pad = 1, .group = ch, .x_zp = 3, .y_zp = 250},
          rng);
    check({.c = ch, .h = 8, .w = 35, .co = ch, .k = 3, .stride = 1, .group = ch, .bias = false, .x_zp = 200,
           .saturate = 16.0f},
          rng);
    check({.c = ch, .h = 12, .w = 112, .co = ch, .k = 3, .stride = 2, .group = ch, .x_zp = 0, .y_zp = 0,
           .pads = {0, 0, 1, 1}},
          rng, 2);
  }
}

// Column strides past pad_planes' per-phase table (16), and stride 2 on narrow rows (its
// vector column split reads on into the next rows of the plane).
TEST(CpuQLinearConv, StridesAndNarrowRows) {
  std::mt19937 rng(kSeed + 9);
  check({.c = 3, .h = 40, .w = 41, .co = 8, .k = 2, .stride = 17, .pad = 1}, rng);
  check({.c = 5, .h = 14, .w = 14, .co = 16, .k = 1, .stride = 2, .x_signed = true, .x_zp = -3}, rng);
  check({.c = 5, .h = 28, .w = 27, .co = 8, .k = 3, .stride = 2, .pad = 1, .x_zp = 200}, rng, 2);
  check({.c = 4, .h = 9, .w = 33, .co = 8, .k = 3, .stride = 2, .pads = {0, 1, 1, 0}}, rng);
}

TEST(CpuQLinearConv, BatchAndThreads) {
  std::mt19937 rng(kSeed + 5);
  for (int threads : {1, 2, 3}) {
    check({.n = 2, .c = 33, .h = 17, .w = 15, .co = 64, .k = 3, .pad = 1, .per_channel = true}, rng, threads);
    check({.n = 2, .c = 64, .h = 14, .w = 14, .co = 96, .k = 1, .x_signed = true, .x_zp = -5}, rng, threads);
    check({.n = 2, .c = 17, .h = 9, .w = 12, .co = 17, .k = 3, .stride = 2, .pad = 1, .group = 17}, rng, threads);
  }
}

// The W * X path (qu8_wxgemm.h, where the CPU has it): several pixel blocks per task (large K
// shrinks the block), pixel counts off the 32-column tile, asymmetric pads that the padded
// phase planes must cover, 1x1 with stride and pad, wide stride-2 rows, threads splitting pixels
// and channels.
TEST(CpuQLinearConv, PixelBlocksAndAsymmetricPads) {
  std::mt19937 rng(kSeed + 7);
  for (int threads : {1, 3}) {
    check({.c = 256, .h = 12, .w = 12, .co = 24, .k = 3, .pad = 1, .per_channel = true}, rng, threads);
    check({.c = 64, .h = 40, .w = 41, .co = 16, .k = 1, .x_signed = true, .x_zp = 9}, rng, threads);
    check({.c = 130, .h = 7, .w = 7, .co = 72, .k = 3, .pad = 1, .y_signed = true, .y_zp = -7}, rng, threads);
  }
  // Wide rows: pad_planes' vector split of stride-2 rows into column phases, and its scalar tail.
  for (int64_t w : {64, 75, 98}) {
    check({.c = 6, .h = 5, .w = w, .co = 16, .k = 3, .stride = 2, .pad = 1, .x_zp = 77}, rng);
    check({.c = 3, .h = 4, .w = w, .co = 8, .k = 1, .stride = 2, .x_signed = true, .x_zp = -9}, rng);
    check({.c = 2, .h = 7, .w = w, .co = 8, .k = 3, .stride = 2, .dil = 2, .pads = {1, 3, 0, 2}}, rng);
    check({.c = 2, .h = 9, .w = w, .co = 8, .k = 7, .stride = 2, .pad = 3, .y_signed = true, .y_zp = 11}, rng);
  }
  for (int64_t s : {1, 2}) {
    check({.c = 5, .h = 11, .w = 13, .co = 9, .k = 3, .stride = s, .pads = {0, 2, 1, 0}}, rng);
    check({.c = 6, .h = 9, .w = 10, .co = 12, .k = 5, .stride = s, .dil = 2, .x_signed = true, .pads = {3, 0, 0, 4}},
          rng);
    check({.c = 7, .h = 9, .w = 9, .co = 8, .k = 1, .stride = s, .pads = {1, 0, 2, 1}}, rng);
  }
}

// The W * X path's gather (qu8_wxgemm_pack_x_runs from pad_planes' planes): ResNet-like maps
// whose 32-pixel panels span 1 to 5 output rows (56, 28, 14, 7 wide), unequal strides (a row
// stride with one column phase: pad_planes' single-phase loop), and row strides / dilations that
// leave padded rows unread (pad_planes skips them).
TEST(CpuQLinearConv, GatherRunsAndSkippedRows) {
  std::mt19937 rng(kSeed + 10);
  for (int64_t hw : {56, 28, 14, 7}) {
    check({.c = 24, .h = hw, .w = hw, .co = 16, .k = 3, .pad = 1, .x_zp = 61}, rng);
    check({.c = 8, .h = hw, .w = hw, .co = 8, .k = 3, .stride = 2, .pad = 1, .x_signed = true, .x_zp = -20}, rng);
  }
  check({.c = 5, .h = 13, .w = 12, .co = 8, .k = 3, .pad = 1, .strides = {2, 1}}, rng);
  check({.c = 5, .h = 16, .w = 9, .co = 8, .k = 1, .x_zp = 250, .strides = {3, 1}}, rng, 2);
  check({.c = 4, .h = 11, .w = 19, .co = 8, .k = 3, .pad = 2, .strides = {1, 2}}, rng);
  check({.c = 4, .h = 21, .w = 10, .co = 8, .k = 3, .dil = 2, .x_signed = true, .x_zp = 5, .strides = {4, 1}}, rng);
  check({.c = 3, .h = 23, .w = 23, .co = 8, .k = 3, .pad = 1, .dil = 2, .strides = {4, 4}}, rng, 3);
  check({.c = 6, .h = 15, .w = 15, .co = 8, .k = 1, .stride = 3, .y_signed = true, .y_zp = 0}, rng);
}

// Channel quads (W * X, input channels a multiple of 4, column stride 1, more than one tap): the
// interleaved padded rows, panels read in place where their pixels lie on one output row (rows
// of 64, 40, 10 pixels: whole, crossing and short panels) and packed where they cross rows (7
// wide: up to 5 rows per panel), padding with x's zero point (u8 and s8), dilation, row strides,
// asymmetric pads, groups of 8 channels, batch, threads, regions.
TEST(CpuQLinearConv, ChannelQuads) {
  std::mt19937 rng(kSeed + 12);
  for (int64_t w : {64, 40, 10, 7}) {
    check({.c = 16, .h = 6, .w = w, .co = 24, .k = 3, .pad = 1, .x_zp = 61}, rng);
    check({.c = 8,
           .h = 5,
           .w = w,
           .co = 9,
           .k = 3,
           .dil = 2,
           .x_signed = true,
           .per_channel = true,
           .x_zp = -20,
           .pads = {2, 0, 1, 3}},
          rng, 3);
  }
  check({.c = 4, .h = 13, .w = 35, .co = 8, .k = 5, .pad = 2, .x_zp = 255, .strides = {2, 1}}, rng);
  check({.n = 2,
         .c = 32,
         .h = 7,
         .w = 33,
         .co = 16,
         .k = 3,
         .pad = 1,
         .group = 4,
         .x_signed = true,
         .y_signed = true,
         .x_zp = 100,
         .y_zp = -5},
        rng, 2);
  check({.c = 12, .h = 9, .w = 50, .co = 17, .k = 3, .pad = 1, .per_channel = true, .region = "hardswish"}, rng, 2);
  check({.c = 8, .h = 4, .w = 3, .co = 8, .k = 3, .pad = 4}, rng);  // rows mostly padding
}

// Depthwise: the f32-kernel path up to its 514-tap bound (with sums near 2^24), and past it the
// int32 direct path; asymmetric pads and a channel multiplier.
TEST(CpuQLinearConv, DepthwiseBigKernels) {
  std::mt19937 rng(kSeed + 8);
  for (int64_t k : {21, 23}) {  // 441 taps (f32 path), 529 taps (int32 path)
    check({.c = 3, .h = 24, .w = 26, .co = 3, .k = k, .pad = k / 2, .group = 3, .x_zp = 0, .saturate = 4.0f}, rng);
    check({.c = 2, .h = 23, .w = 23, .co = 4, .k = k, .stride = 2, .pad = 3, .group = 2, .x_signed = true,
           .y_signed = true, .x_zp = -128, .y_zp = 0},
          rng);
  }
  check({.c = 4, .h = 9, .w = 17, .co = 4, .k = 3, .stride = 2, .group = 4, .pads = {0, 1, 2, 0}}, rng);
}

// nfuse.QLinearConvRegion: the float epilogue on every path (W * X tiles with several pixel
// blocks and channel tiles, X * W's int32 accumulators, grouped, depthwise on the f32 path with a
// channel multiplier), u8 and s8, saturating outputs, threads; bit for bit with ref.
TEST(CpuQLinearConv, RegionEpilogue) {
  std::mt19937 rng(kSeed + 11);
  for (const std::string region : {"hardswish", "sigmoid"}) {
    for (int threads : {1, 3}) {
      check({.c = 17, .h = 11, .w = 10, .co = 19, .k = 3, .pad = 1, .per_channel = true, .region = region}, rng,
            threads);
      check({.c = 256,
             .h = 12,
             .w = 12,
             .co = 24,
             .k = 3,
             .pad = 1,
             .x_signed = true,
             .y_signed = true,
             .x_zp = 5,
             .y_zp = -20,
             .region = region},
            rng, threads);
      check({.c = 64, .h = 40, .w = 41, .co = 16, .k = 1, .bias = false, .x_zp = 9, .saturate = 8.0f, .region = region},
            rng, threads);
      check({.c = 16, .h = 9, .w = 9, .co = 32, .k = 3, .pad = 1, .group = 4, .per_channel = true, .region = region},
            rng, threads);
      check({.c = 8,
             .h = 13,
             .w = 19,
             .co = 16,
             .k = 3,
             .stride = 2,
             .pad = 1,
             .group = 8,
             .per_channel = true,
             .x_zp = 200,
             .y_zp = 3,
             .region = region},
            rng, threads);
      check({.c = 5,
             .h = 10,
             .w = 70,
             .co = 5,
             .k = 5,
             .pad = 2,
             .group = 5,
             .x_signed = true,
             .x_zp = -3,
             .saturate = 8.0f,
             .region = region},
            rng, threads);
      // Batches: each image's channel index and output plane.
      check({.n = 3,
             .c = 16,
             .h = 9,
             .w = 9,
             .co = 32,
             .k = 3,
             .pad = 1,
             .group = 4,
             .per_channel = true,
             .region = region},
            rng, threads);
      check({.n = 2, .c = 6, .h = 11, .w = 12, .co = 6, .k = 3, .stride = 2, .pad = 1, .group = 6, .region = region},
            rng, threads);
    }
  }
}

// A depthwise region op past the f32 path's 514 taps runs on the reference kernel.
TEST(CpuQLinearConv, RegionEpilogueBigDepthwiseDeclines) {
  std::mt19937 rng(kSeed + 12);
  const TypedNode t =
      build({.c = 2, .h = 24, .w = 24, .co = 2, .k = 23, .pad = 11, .group = 2, .region = "sigmoid"}, rng);
  auto g = t.build();
  auto op = backends::cpu::make_qlinear_conv_region(*g->nodes()[0], backends::CompileContext{});
  ASSERT_TRUE(op.ok()) << op.status().to_string();
  EXPECT_EQ(*op, nullptr);
  expect_typed_matches_ref(t, 0, "529-tap depthwise region on ref");
}

// Every GEMM configuration this CPU runs (scalar, AVX2, AVX-512 VNNI, NEON) on one sweep.
TEST(CpuQLinearConv, EveryKernelConfig) {
  for (const kernels::Qu8GemmConfig* cfg : kernels::qu8_gemm_configs()) {
    SCOPED_TRACE(cfg->name);
    kernels::ScopedIsaOverride isa(cfg->isa);
    std::mt19937 rng(kSeed + 6);
    check({.n = 2, .c = 17, .h = 9, .w = 11, .co = 33, .k = 3, .pad = 1, .x_zp = 255, .y_zp = 0, .saturate = 8.0f},
          rng, 2);
    check({.c = 64, .h = 7, .w = 7, .co = 40, .k = 1, .x_signed = true, .y_signed = true, .per_channel = true,
           .x_zp = 127, .y_zp = -128, .saturate = 8.0f},
          rng);
    // Depthwise on this ISA's f32 kernels and conversions (plane sizes off the vector width).
    check({.c = 5, .h = 13, .w = 19, .co = 5, .k = 3, .stride = 2, .pad = 1, .group = 5, .x_signed = true,
           .per_channel = true, .x_zp = -3, .y_zp = 200},
          rng, 2);
    check({.c = 3, .h = 7, .w = 33, .co = 6, .k = 5, .pad = 2, .group = 3, .y_signed = true, .x_zp = 250,
           .y_zp = -100, .saturate = 8.0f},
          rng);
    // The region epilogue on this ISA's GEMM, region and quantize kernels.
    check({.c = 33, .h = 9, .w = 11, .co = 40, .k = 3, .pad = 1, .per_channel = true, .region = "hardswish"}, rng, 2);
    check({.c = 6, .h = 13, .w = 19, .co = 6, .k = 3, .pad = 1, .group = 6, .region = "hardswish"}, rng);
    // Channel quads on this ISA's W * X configuration (in place, or packed where it has no quad kernel).
    check({.c = 16, .h = 5, .w = 37, .co = 12, .k = 3, .pad = 1, .x_signed = true, .x_zp = -7}, rng, 2);
  }
}

}  // namespace
}  // namespace nfuse::cpu_test
