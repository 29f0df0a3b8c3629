// Tests for the element-wise family (unary, binary, activation, logical, reduce, softmax, cast)
// on hand-built nodes run through the reference kernels. They cover what the ONNX conformance
// cases do not: integer edge cases we define ourselves, legacy opset forms, rounding of casts
// and hostile attributes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/ref/interpreter.h"
#include "ir/graph.h"
#include "ir/op_registry.h"

namespace nfuse {
namespace {

using backends::ref::evaluate_node;
using ir::DType;
using ir::Tensor;

// Owns a graph holding one node whose inputs are given tensors (omitted where empty).
struct OneNode {
  ir::Graph g;
  ir::Node* node = nullptr;
  std::vector<Tensor> ins;

  OneNode(const std::string& op, std::vector<Tensor> inputs, ir::Attributes attrs = {}, int opset = 17)
      : ins(std::move(inputs)) {
    std::vector<ir::Value*> in_values;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].empty()) {
        in_values.push_back(nullptr);
        continue;
      }
      ir::TensorType t{ins[i].dtype(), ir::Shape::from_dims(ins[i].dims())};
      in_values.push_back(g.add_value("in" + std::to_string(i), t).value());
    }
    node = g.add_node(op, "n", in_values, {g.add_value("out").value()}, std::move(attrs));
    node->opset = opset;
  }
  Result<Tensor> run() const {
    std::vector<const Tensor*> p;
    for (const Tensor& t : ins) p.push_back(t.empty() ? nullptr : &t);
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::verify_node(*node));
    NFUSE_ASSIGN_OR_RETURN(std::vector<Tensor> outs, evaluate_node(*node, p));
    return outs[0];
  }
};

template <typename T>
Tensor tensor(std::vector<T> v, std::vector<int64_t> dims) {
  return Tensor::from_vector(v, std::move(dims));
}
template <typename T>
Tensor vec(std::vector<T> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(v, {n});
}
template <typename T>
std::vector<T> values_of(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.numel());
}
ir::Attributes attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> list) {
  ir::Attributes a;
  for (const auto& [k, v] : list) a.set(k, v);
  return a;
}

constexpr int32_t kI32Min = std::numeric_limits<int32_t>::min();
constexpr int32_t kI32Max = std::numeric_limits<int32_t>::max();

TEST(Elementwise, IntegerDivTruncatesAndDefinesZeroDivisor) {
  OneNode n("Div", {vec<int32_t>({7, -7, 7, kI32Min, 5, 0}), vec<int32_t>({2, 2, -2, -1, 0, 0})});
  auto y = n.run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*y), (std::vector<int32_t>{3, -3, -3, kI32Min, 0, 0}));
}

TEST(Elementwise, IntegerModFollowsDivisorOrDividendSign) {
  auto x = vec<int32_t>({-4, 7, -7, 5, kI32Min});
  auto d = vec<int32_t>({3, -3, -3, 0, -1});
  auto py = OneNode("Mod", {x, d}).run();
  ASSERT_TRUE(py.ok()) << py.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*py), (std::vector<int32_t>{2, -2, -1, 0, 0}));
  auto c = OneNode("Mod", {x, d}, attrs({{"fmod", int64_t{1}}})).run();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*c), (std::vector<int32_t>{-1, 1, -1, 0, 0}));
}

TEST(Elementwise, IntegerAddAndNegWrap) {
  auto add = OneNode("Add", {vec<int8_t>({127, -128}), vec<int8_t>({1, -1})}).run();
  ASSERT_TRUE(add.ok()) << add.status().to_string();
  EXPECT_EQ(values_of<int8_t>(*add), (std::vector<int8_t>{-128, 127}));
  auto neg = OneNode("Neg", {vec<int32_t>({kI32Min, 3})}).run();
  ASSERT_TRUE(neg.ok());
  EXPECT_EQ(values_of<int32_t>(*neg), (std::vector<int32_t>{kI32Min, -3}));
}

TEST(Elementwise, RoundHalfToEven) {
  auto y = OneNode("Round", {vec<float>({0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 2.4f, -2.6f})}).run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{0.f, 2.f, 2.f, -0.f, -2.f, 2.f, -3.f}));
}

TEST(Elementwise, PowIntegerExponentsAreExactAndMixedTypesWork) {
  auto ints = OneNode("Pow", {vec<int64_t>({2, -3, 5, 1, -1, 3}), vec<int64_t>({40, 3, -1, -5, -3, 0})}).run();
  ASSERT_TRUE(ints.ok()) << ints.status().to_string();
  EXPECT_EQ(values_of<int64_t>(*ints), (std::vector<int64_t>{int64_t{1} << 40, -27, 0, 1, -1, 1}));
  auto mixed = OneNode("Pow", {vec<int32_t>({2, 3}), vec<float>({0.5f, 2.0f})}).run();
  ASSERT_TRUE(mixed.ok()) << mixed.status().to_string();
  EXPECT_EQ(mixed->dtype(), DType::kI32);
  EXPECT_EQ(values_of<int32_t>(*mixed), (std::vector<int32_t>{1, 9}));
}

TEST(Elementwise, BitShiftPastWidthIsZeroAndDirectionIsChecked) {
  auto y = OneNode("BitShift", {vec<uint8_t>({1, 255, 16}), vec<uint8_t>({9, 1, 4})},
                   attrs({{"direction", std::string("LEFT")}}))
               .run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<uint8_t>(*y), (std::vector<uint8_t>{0, 254, 0}));
  auto bad = OneNode("BitShift", {vec<uint8_t>({1}), vec<uint8_t>({1})}, attrs({{"direction", std::string("UP")}})).run();
  EXPECT_FALSE(bad.ok());
}

TEST(Elementwise, LegacyBroadcastAlignsAtAxis) {
  // Opset 6: B [2] onto A [2,3] at axis 0 is per row, which numpy broadcasting would reject.
  OneNode n("Add", {tensor<float>({0, 0, 0, 0, 0, 0}, {2, 3}), vec<float>({1, 2})},
            attrs({{"broadcast", int64_t{1}}, {"axis", int64_t{0}}}), 6);
  auto y = n.run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{1, 1, 1, 2, 2, 2}));
  OneNode bad("Add", {tensor<float>({0, 0, 0, 0, 0, 0}, {2, 3}), vec<float>({1, 2})},
              attrs({{"broadcast", int64_t{1}}, {"axis", int64_t{1}}}), 6);
  EXPECT_FALSE(bad.run().ok());
}

TEST(Elementwise, VariadicMaxBroadcastsAndMinPropagatesNaN) {
  auto mx = OneNode("Max", {tensor<float>({1, 5}, {2, 1}), vec<float>({3, 0, 4}), tensor<float>({2}, {})}).run();
  ASSERT_TRUE(mx.ok()) << mx.status().to_string();
  EXPECT_EQ(mx->dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of<float>(*mx), (std::vector<float>{3, 2, 4, 5, 5, 5}));
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto mn = OneNode("Min", {vec<float>({nan, 1}), vec<float>({0, nan})}).run();
  ASSERT_TRUE(mn.ok());
  EXPECT_TRUE(std::isnan(mn->data<float>()[0]));
  EXPECT_TRUE(std::isnan(mn->data<float>()[1]));
}

TEST(Elementwise, WhereBroadcastsAllThreeInputs) {
  auto y = OneNode("Where", {tensor<bool>({true, false}, {2, 1}), vec<int64_t>({1, 2, 3}), tensor<int64_t>({-1}, {})})
               .run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int64_t>(*y), (std::vector<int64_t>{1, 2, 3, -1, -1, -1}));
}

TEST(ElementwiseActivation, ClipFromAttributesAndFromInputsWithOneOmitted) {
  auto legacy = OneNode("Clip", {vec<float>({-2, 0.25f, 2})}, attrs({{"min", -0.5f}, {"max", 0.5f}}), 6).run();
  ASSERT_TRUE(legacy.ok()) << legacy.status().to_string();
  EXPECT_EQ(values_of<float>(*legacy), (std::vector<float>{-0.5f, 0.25f, 0.5f}));
  const float inf = std::numeric_limits<float>::infinity();
  auto no_min = OneNode("Clip", {vec<float>({-inf, 0.25f, 2}), Tensor(), tensor<float>({1}, {})}, {}, 13).run();
  ASSERT_TRUE(no_min.ok()) << no_min.status().to_string();
  EXPECT_EQ(values_of<float>(*no_min), (std::vector<float>{-inf, 0.25f, 1}));
  auto ints = OneNode("Clip", {vec<int8_t>({-100, 5, 100}), tensor<int8_t>({-10}, {}), tensor<int8_t>({10}, {})}).run();
  ASSERT_TRUE(ints.ok()) << ints.status().to_string();
  EXPECT_EQ(values_of<int8_t>(*ints), (std::vector<int8_t>{-10, 5, 10}));
}

TEST(ElementwiseActivation, LegacyPReluSlopeIsPerChannel) {
  // Opset 6 as PyTorch exports it: slope [C] applies along axis 1 of [N, C, W].
  OneNode n("PRelu", {tensor<float>({-1, -1, -1, -1}, {1, 2, 2}), vec<float>({0.5f, 2})}, {}, 6);
  auto y = n.run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{-0.5f, -0.5f, -2, -2}));
  OneNode bad("PRelu", {tensor<float>({-1, -1, -1, -1}, {1, 2, 2}), vec<float>({0.5f, 2, 3})}, {}, 16);
  EXPECT_FALSE(bad.run().ok());
}

TEST(ElementwiseUnary, IsInfHonoursDetectFlags) {
  const float inf = std::numeric_limits<float>::infinity();
  auto y = OneNode("IsInf", {vec<float>({inf, -inf, 1})}, attrs({{"detect_positive", int64_t{0}}})).run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<bool>(*y), (std::vector<bool>{false, true, false}));
}

// x[i, j, k] = k for shape [2, 2, 2].
Tensor ramp222() { return tensor<float>({0, 1, 0, 1, 0, 1, 0, 1}, {2, 2, 2}); }

TEST(ElementwiseSoftmax, Opset11CoercesTo2DWhileOpset13UsesOneAxis) {
  auto legacy = OneNode("Softmax", {ramp222()}, attrs({{"axis", int64_t{1}}}), 11).run();
  ASSERT_TRUE(legacy.ok()) << legacy.status().to_string();
  // One row of 4 per batch: e^0 and e^1 twice each.
  const float e = std::exp(1.0f);
  EXPECT_NEAR(legacy->data<float>()[1], e / (2 + 2 * e), 1e-6);
  auto single = OneNode("Softmax", {ramp222()}, attrs({{"axis", int64_t{1}}}), 13).run();
  ASSERT_TRUE(single.ok());
  // Along axis 1 the two values are equal: 0.5 each.
  for (float v : values_of<float>(*single)) EXPECT_NEAR(v, 0.5f, 1e-6);
  auto def = OneNode("LogSoftmax", {ramp222()}, {}, 13).run();  // default axis -1
  ASSERT_TRUE(def.ok());
  EXPECT_NEAR(def->data<float>()[1], -std::log1p(std::exp(-1.0f)), 1e-6);
}

TEST(ElementwiseSoftmax, RejectsAxisOutOfRange) {
  EXPECT_FALSE(OneNode("Softmax", {ramp222()}, attrs({{"axis", int64_t{3}}}), 13).run().ok());
  EXPECT_FALSE(OneNode("Hardmax", {ramp222()}, attrs({{"axis", int64_t{-4}}}), 13).run().ok());
}

TEST(ElementwiseSoftmax, HardmaxPicksFirstMaximum) {
  auto y = OneNode("Hardmax", {tensor<float>({3, 1, 3, 2}, {1, 4})}, {}, 13).run();
  ASSERT_TRUE(y.ok());
  EXPECT_EQ(values_of<float>(*y), (std::vector<float>{1, 0, 0, 0}));
}

TEST(ElementwiseReduce, AxesInputKeepdimsAndNoop) {
  Tensor x = tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  auto last = OneNode("ReduceSum", {x, vec<int64_t>({-1})}, attrs({{"keepdims", int64_t{0}}}), 13).run();
  ASSERT_TRUE(last.ok()) << last.status().to_string();
  EXPECT_EQ(last->dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values_of<float>(*last), (std::vector<float>{6, 15}));
  Tensor empty = Tensor::allocate(DType::kI64, {0});
  auto noop = OneNode("ReduceSum", {x, empty}, attrs({{"noop_with_empty_axes", int64_t{1}}}), 13).run();
  ASSERT_TRUE(noop.ok()) << noop.status().to_string();
  EXPECT_EQ(noop->dims(), x.dims());
  EXPECT_EQ(values_of<float>(*noop), values_of<float>(x));
  auto all = OneNode("ReduceSum", {x, empty}, {}, 13).run();
  ASSERT_TRUE(all.ok());
  EXPECT_EQ(all->dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(all->data<float>()[0], 21);
  auto attr = OneNode("ReduceMean", {x}, attrs({{"axes", std::vector<int64_t>{0}}}), 11).run();
  ASSERT_TRUE(attr.ok());
  EXPECT_EQ(values_of<float>(*attr), (std::vector<float>{2.5f, 3.5f, 4.5f}));
}

TEST(ElementwiseReduce, RejectsOutOfRangeAndRepeatedAxes) {
  Tensor x = tensor<float>({1, 2, 3, 4}, {2, 2});
  EXPECT_FALSE(OneNode("ReduceMax", {x}, attrs({{"axes", std::vector<int64_t>{2}}}), 13).run().ok());
  EXPECT_FALSE(OneNode("ReduceMax", {x}, attrs({{"axes", std::vector<int64_t>{1, -1}}}), 13).run().ok());
  EXPECT_FALSE(OneNode("ReduceSum", {x, vec<int64_t>({-3})}, {}, 13).run().ok());
}

TEST(ElementwiseReduce, IntegerSumsWrapAndMeanTruncates) {
  auto sum = OneNode("ReduceSum", {vec<int32_t>({kI32Max, 1})}, attrs({{"keepdims", int64_t{0}}}), 11).run();
  ASSERT_TRUE(sum.ok()) << sum.status().to_string();
  EXPECT_EQ(sum->data<int32_t>()[0], kI32Min);
  auto mean = OneNode("ReduceMean", {vec<int32_t>({-3, -4})}, {}, 11).run();
  ASSERT_TRUE(mean.ok());
  EXPECT_EQ(mean->data<int32_t>()[0], -3);
}

TEST(ElementwiseReduce, LogSumExpIsStableForLargeValues) {
  auto y = OneNode("ReduceLogSumExp", {vec<float>({1000, 1000})}, {}, 13).run();
  ASSERT_TRUE(y.ok());
  EXPECT_NEAR(y->data<float>()[0], 1000 + std::log(2.0f), 1e-3);
}

TEST(ElementwiseReduce, ArgMaxSelectLastIndexAndArgMinKeepdims) {
  Tensor x = tensor<float>({2, 7, 7, 1, 1, 0}, {2, 3});
  auto first = OneNode("ArgMax", {x}, attrs({{"axis", int64_t{1}}, {"keepdims", int64_t{0}}})).run();
  ASSERT_TRUE(first.ok()) << first.status().to_string();
  EXPECT_EQ(values_of<int64_t>(*first), (std::vector<int64_t>{1, 0}));
  auto last = OneNode("ArgMax", {x}, attrs({{"axis", int64_t{1}}, {"select_last_index", int64_t{1}}})).run();
  ASSERT_TRUE(last.ok());
  EXPECT_EQ(last->dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values_of<int64_t>(*last), (std::vector<int64_t>{2, 1}));
  auto amin = OneNode("ArgMin", {x}, attrs({{"axis", int64_t{-2}}})).run();
  ASSERT_TRUE(amin.ok());
  EXPECT_EQ(values_of<int64_t>(*amin), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_FALSE(OneNode("ArgMax", {x}, attrs({{"axis", int64_t{2}}})).run().ok());
}

TEST(ElementwiseReduce, CumSumExclusiveReverse) {
  auto y = OneNode("CumSum", {vec<int32_t>({1, 2, 3}), tensor<int64_t>({0}, {})},
                   attrs({{"exclusive", int64_t{1}}, {"reverse", int64_t{1}}}))
               .run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*y), (std::vector<int32_t>{5, 3, 0}));
  EXPECT_FALSE(OneNode("CumSum", {vec<int32_t>({1}), tensor<int64_t>({1}, {})}).run().ok());
}

TEST(ElementwiseCast, DoubleToHalfRoundsOnceFromTheExactValue) {
  // Just above the midpoint between 1 and the next half (1 + 2^-10): through f32 the excess
  // is lost and the tie rounds to even (1.0); the correct result is 1 + 2^-10 (0x3C01).
  const double d = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  auto y = OneNode("Cast", {vec<double>({d, -d})}, attrs({{"to", int64_t{10}}})).run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  ASSERT_EQ(y->dtype(), DType::kF16);
  EXPECT_EQ(y->data<ir::Half>()[0].bits, 0x3C01);
  EXPECT_EQ(y->data<ir::Half>()[1].bits, 0xBC01);
}

TEST(ElementwiseCast, FloatToBFloat16RoundsToNearestEvenAndBack) {
  float f;
  const uint32_t bits = 0x3ef5eeb0u;  // low half above the midpoint: rounds up to 0x3ef6
  std::memcpy(&f, &bits, 4);
  auto y = OneNode("Cast", {vec<float>({f})}, attrs({{"to", int64_t{16}}})).run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(y->data<ir::BFloat16>()[0].bits, 0x3ef6);
  auto back = OneNode("Cast", {*y}, attrs({{"to", int64_t{1}}})).run();
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->data<float>()[0], ir::bf16_to_float(0x3ef6));
}

TEST(ElementwiseCast, FloatToIntTruncatesSaturatesAndMapsNaNToZero) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto y = OneNode("Cast", {vec<float>({3.9f, -3.9f, 1e10f, -1e10f, nan})}, attrs({{"to", int64_t{6}}})).run();
  ASSERT_TRUE(y.ok()) << y.status().to_string();
  EXPECT_EQ(values_of<int32_t>(*y), (std::vector<int32_t>{3, -3, kI32Max, kI32Min, 0}));
  auto b = OneNode("Cast", {vec<float>({0.f, -0.f, 0.5f, nan})}, attrs({{"to", int64_t{9}}})).run();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(values_of<bool>(*b), (std::vector<bool>{false, false, true, true}));
  auto wrap = OneNode("Cast", {vec<int32_t>({300, -1})}, attrs({{"to", int64_t{2}}})).run();
  ASSERT_TRUE(wrap.ok());
  EXPECT_EQ(values_of<uint8_t>(*wrap), (std::vector<uint8_t>{44, 255}));
}

TEST(ElementwiseCast, StringAndUnknownTargetsAreRejected) {
  auto s = OneNode("Cast", {vec<float>({1})}, attrs({{"to", int64_t{8}}})).run();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), StatusCode::kUnsupported);
  EXPECT_FALSE(OneNode("Cast", {vec<float>({1})}, attrs({{"to", int64_t{99}}})).run().ok());
  EXPECT_FALSE(OneNode("Cast", {vec<float>({1})}).run().ok());  // `to` missing
}

TEST(Elementwise, FloatOnlyOpsRejectIntegers) {
  auto y = OneNode("Sqrt", {vec<int32_t>({4})}).run();
  ASSERT_FALSE(y.ok());
  EXPECT_EQ(y.status().code(), StatusCode::kUnsupported);
  EXPECT_FALSE(OneNode("Add", {vec<int32_t>({4}), vec<float>({1})}).run().ok());  // mixed dtypes
  EXPECT_FALSE(OneNode("Add", {vec<float>({1, 2}), vec<float>({1, 2, 3})}).run().ok());  // no broadcast
}

}  // namespace
}  // namespace nfuse
