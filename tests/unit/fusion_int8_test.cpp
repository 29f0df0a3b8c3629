// The fusion backend's integer groups against the ref kernels, byte for byte: quantized
// MobileNetV2 blocks (1x1 QLinearConv -> depthwise 3x3 QLinearConv -> 1x1 QLinearConv ->
// com.microsoft QLinearAdd with the block input), stride 2 in the middle, 5x5 depthwise (the
// exact f32 path), u8 and s8, zero points at both ends, saturation, odd planes, batch 2, every
// strip height from one row to the whole image, 1 and 2 threads, nfuse.QLinearLookup activations
// in between, dense KxK convolutions (strides, pads, dilation, groups), 8-bit MaxPool and
// QLinearConcat; and that the whole chain ran on fusion, as one group, with its traffic. The same
// for W8A16 chains (nfuse.QLinearConv16: 1x1, dense and depthwise, i16 and u16).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cpu_test_util.h"
#include "partition/partitioner.h"
#include "runtime/session.h"
#include "support/qchain_graph.h"

namespace nfuse {
namespace {

using testing::QChain;

using QChainFn = void (*)(QChain&);

void check(const std::vector<int64_t>& x_dims, bool is_signed, QChainFn build, const std::string& what,
           size_t expect_members, int bits = 8) {
  auto run = [&](const std::string& backend, int threads, int tiles, const compile::Plan** plan_out,
                 std::unique_ptr<runtime::Session>* keep) -> Result<ir::Tensor> {
    QChain chain(x_dims, is_signed, cpu_test::kSeed, bits);
    build(chain);
    runtime::SessionOptions o;
    o.backend = backend;
    o.threads = threads;
    o.optimize = false;
    o.tile_rows = tiles;
    NFUSE_ASSIGN_OR_RETURN(*keep, runtime::Session::create(chain.graph(), o));
    NFUSE_ASSIGN_OR_RETURN(auto outs, (*keep)->run(chain.feeds()));
    std::map<std::string, std::vector<int64_t>> dims;
    for (const auto& [name, t] : chain.feeds()) dims[name] = t.dims();
    NFUSE_ASSIGN_OR_RETURN(*plan_out, (*keep)->prepare(dims));
    return outs[0];
  };
  std::unique_ptr<runtime::Session> ref_session;
  const compile::Plan* ref_plan = nullptr;
  auto ref = run("ref", 1, 0, &ref_plan, &ref_session);
  ASSERT_TRUE(ref.ok()) << what << ": ref: " << ref.status().to_string();
  for (int threads : {1, 2}) {
    for (int tiles : {1, 2, 3, 0, 1000}) {
      std::unique_ptr<runtime::Session> session;
      const compile::Plan* plan = nullptr;
      auto got = run("fusion", threads, tiles, &plan, &session);
      ASSERT_TRUE(got.ok()) << what << ": fusion: " << got.status().to_string();
      // Everything ran on fusion, as one group of all the members.
      ASSERT_EQ(plan->steps.size(), 1u) << what;
      ASSERT_EQ(plan->steps[0].partition.backend, "fusion") << what;
      const backends::PartitionTraffic t = plan->steps[0].compiled->traffic();
      ASSERT_EQ(t.groups.size(), 1u) << what;
      EXPECT_EQ(t.groups[0].nodes.size(), expect_members) << what;
      EXPECT_LT(t.fused_bytes, t.layerwise_bytes) << what;
      ASSERT_EQ(got->dims(), ref->dims()) << what;
      ASSERT_EQ(got->dtype(), ref->dtype()) << what;
      for (int64_t i = 0; i < ref->numel() * static_cast<int64_t>(ir::dtype_size(ref->dtype())); ++i) {
        const int a = static_cast<const uint8_t*>(got->raw())[i], b = static_cast<const uint8_t*>(ref->raw())[i];
        ASSERT_EQ(a, b) << what << " (seed " << cpu_test::kSeed << ", threads " << threads << ", tile rows " << tiles
                        << "): first mismatch at flat index " << i << " of " << ir::dims_to_string(ref->dims());
      }
    }
  }
}

TEST(FusionInt8, InvertedResidualU8) {
  check({1, 16, 23, 17}, false,
        [](QChain& c) { c.qconv(96, 1, 1, 0, 1).qconv(96, 3, 1, 1, 96).qconv(16, 1, 1, 0, 1).add_input(false); },
        "u8 expand/dw/project+add 23x17", 4);
}

TEST(FusionInt8, InvertedResidualS8ResidualFirstAndSaturating) {
  check({1, 8, 19, 33}, true,
        [](QChain& c) {
          c.qconv(40, 1, 1, 0, 1, 8.0f).qconv(40, 3, 1, 1, 40, 8.0f).qconv(8, 1, 1, 0, 1).add_input(true);
        },
        "s8 expand/dw/project + input-first add, saturating 19x33", 4);
}

TEST(FusionInt8, StrideTwoDepthwiseInTheMiddle) {
  check({1, 8, 31, 20}, false, [](QChain& c) { c.qconv(48, 1, 1, 0, 1).qconv(48, 3, 2, 1, 48).qconv(24, 1, 1, 0, 1); },
        "u8 expand/dw s2/project 31x20", 3);
}

TEST(FusionInt8, FiveByFiveDepthwiseRunsTheExactF32Path) {
  check({1, 12, 17, 26}, true, [](QChain& c) { c.qconv(24, 1, 1, 0, 1).qconv(24, 5, 2, 2, 24).qconv(12, 1, 1, 0, 1); },
        "s8 expand/dw5x5 s2/project 17x26", 3);
}

TEST(FusionInt8, BatchOfTwoAndOneRowImage) {
  check({2, 8, 18, 11}, false,
        [](QChain& c) { c.qconv(32, 1, 1, 0, 1).qconv(32, 3, 1, 1, 32).qconv(8, 1, 1, 0, 1).add_input(false); },
        "u8 batch 2", 4);
  check({1, 8, 1, 40}, false, [](QChain& c) { c.qconv(16, 1, 1, 0, 1).qconv(16, 3, 1, 1, 16).qconv(8, 1, 1, 0, 1); },
        "u8 1-row image", 3);
}

// Table lookups (int8 activations) run in place between the convolutions instead of cutting the
// chain: after the expand and the depthwise, u8 and s8 (whose table the member rotates).
TEST(FusionInt8, LookupActivationsStayInTheChain) {
  check({1, 8, 21, 19}, false,
        [](QChain& c) { c.qconv(32, 1, 1, 0, 1).lookup().qconv(32, 3, 1, 1, 32).lookup().qconv(8, 1, 1, 0, 1); },
        "u8 expand/lut/dw/lut/project 21x19", 5);
  check({2, 8, 13, 22}, true,
        [](QChain& c) { c.qconv(24, 1, 1, 0, 1).lookup().lookup().qconv(24, 3, 2, 1, 24).lookup().qconv(8, 1, 1, 0, 1); },
        "s8 expand/lut/lut/dw s2/lut/project, batch 2", 6);
}

// Dense convolutions (the 3x3 stride-2 stem of every quantized CNN, YOLO's 3x3 chains) pad each
// strip's window from the line buffer: strides 1 and 2 (either position), pads at strip edges,
// asymmetric pads, dilation, 5x5, groups, 1x1 with stride 2, after and before depthwise members.
TEST(FusionInt8, DenseConvolutionsPadTheirWindowPerStrip) {
  check({1, 3, 29, 23}, false,
        [](QChain& c) { c.qconv(16, 3, 2, 1, 1).qconv(16, 3, 1, 1, 16).qconv(24, 1, 1, 0, 1).qconv(24, 3, 1, 1, 1); },
        "u8 stem 3x3 s2 / dw / 1x1 / 3x3 29x23", 4);
  check({1, 8, 21, 30}, true,
        [](QChain& c) {
          c.qconv(16, 3, 1, 2, 1, 1.0f, 2).qconv(16, 1, 2, 0, 1).qconv(24, 5, 1, 2, 2).qconv(8, 3, 2, 0, 1, 1.0f, 1, 1);
        },
        "s8 3x3 dilated 2 / 1x1 s2 / 5x5 group 2 / 3x3 s2 pads 0,1 21x30", 4);
  check({2, 4, 17, 9}, false, [](QChain& c) { c.qconv(8, 3, 1, 1, 1).lookup().qconv(4, 3, 1, 1, 1).add_input(false); },
        "u8 3x3 / lut / 3x3 + add, batch 2", 4);
  check({1, 4, 1, 40}, true, [](QChain& c) { c.qconv(8, 3, 1, 1, 1).qconv(4, 3, 1, 1, 1); }, "s8 1-row image", 2);
}

// QLinearConcat joins the chain: its chained part from the member before it, the other from the
// arena, each copied or requantized through its table; a convolution reads the concatenation.
TEST(FusionInt8, QLinearConcatJoinsTheChain) {
  check({1, 4, 19, 13}, false,
        [](QChain& c) { c.qconv(8, 3, 1, 1, 1).concat_input(false, false).qconv(8, 1, 1, 0, 1); },
        "u8 3x3 / concat(conv, input) keeping the conv's parameters / 1x1", 3);
  check({2, 4, 15, 21}, true,
        [](QChain& c) { c.qconv(12, 1, 1, 0, 1).lookup().concat_input(true, true).qconv(8, 3, 1, 1, 1); },
        "s8 1x1 / lut / concat(input, conv) requantizing both / 3x3, batch 2", 4);
}

// An 8-bit nearest Resize read as QLinearAdd's operand joins the group: each strip gathers its
// rows from the Resize's source, the upsampled bytes never exist.
TEST(FusionInt8, UpsampledOperandOfQLinearAdd) {
  check({1, 4, 20, 18}, false,
        [](QChain& c) { c.qconv(8, 3, 1, 1, 1).add_upsampled(1, 10, 9, 2, false).qconv(4, 1, 1, 0, 1); },
        "u8 3x3 / + x2 upsampled / 1x1 20x18", 4);
  check({2, 4, 12, 16}, true,
        [](QChain& c) { c.qconv(6, 1, 1, 0, 1).add_upsampled(2, 3, 4, 4, true).qconv(6, 3, 1, 1, 6); },
        "s8 1x1 / x4 upsampled + / dw, batch 2", 4);
}

// 8-bit MaxPool between convolutions: YOLO's 2x2 stride-2 downsampling and its 5x5 stride-1
// SPP pools, padding at strip edges, dilation.
TEST(FusionInt8, MaxPoolStaysInTheChain) {
  check({1, 4, 27, 22}, false,
        [](QChain& c) { c.qconv(8, 3, 1, 1, 1).maxpool(2, 2, 0).qconv(8, 3, 1, 1, 1).maxpool(5, 1, 2).qconv(4, 1, 1, 0, 1); },
        "u8 3x3 / pool 2x2 s2 / 3x3 / pool 5x5 s1 / 1x1 27x22", 5);
  check({2, 4, 17, 19}, true,
        [](QChain& c) { c.qconv(8, 1, 1, 0, 1).maxpool(3, 2, 1, 2).qconv(8, 3, 1, 1, 8); },
        "s8 1x1 / pool 3x3 s2 dilated 2 / dw, batch 2", 3);
}

// W8A16: 1x1 on the qs16 GEMM read from line buffers, depthwise on the direct int64 loop.
TEST(FusionInt16, PointwiseDepthwisePointwise) {
  check({1, 16, 23, 17}, true,
        [](QChain& c) { c.qconv(48, 1, 1, 0, 1).qconv(48, 3, 1, 1, 48).qconv(16, 1, 1, 0, 1, 4.0f); },
        "s16 expand/dw/project 23x17", 3, 16);
  check({2, 8, 19, 12}, false,
        [](QChain& c) { c.qconv(24, 1, 1, 0, 1, 8.0f).qconv(24, 5, 2, 2, 24).qconv(8, 1, 1, 0, 1); },
        "u16 expand (saturating) / dw5x5 s2 / project, batch 2", 3, 16);
  check(
      {1, 16, 23, 17}, true,
      [](QChain& c) { c.qconv(48, 1, 1, 0, 1).relu_clamp().qconv(48, 3, 1, 1, 48).relu_clamp().qconv(16, 1, 1, 0, 1); },
      "s16 expand/dw with fused Relu clamps (y_min = y_zp) / project", 3, 16);
}

// W8A16 dense convolutions: each strip's window copied to NHWC and its im2col rows built, as
// the cpu op does for whole planes; stem 3x3 s2, grouped 3x3, dilated 3x3, 1x1 stride 2.
TEST(FusionInt16, DenseConvolutions) {
  check({1, 3, 21, 18}, false,
        [](QChain& c) { c.qconv(16, 3, 2, 1, 1).qconv(16, 3, 1, 1, 16).qconv(8, 3, 1, 1, 2).qconv(8, 1, 2, 0, 1); },
        "u16 stem 3x3 s2 / dw / 3x3 group 2 / 1x1 s2 21x18", 4, 16);
  check({2, 4, 13, 17}, true,
        [](QChain& c) { c.qconv(8, 3, 1, 2, 1, 1.0f, 2).qconv(6, 5, 2, 1, 1, 1.0f, 1, 2); },
        "s16 3x3 dilated 2 / 5x5 s2 pads 1,2, batch 2", 2, 16);
}

}  // namespace
}  // namespace nfuse
