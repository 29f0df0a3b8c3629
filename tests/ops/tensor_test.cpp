// Tests for the tensor-manipulation family (Reshape ... TopK) beyond the ONNX conformance
// cases: symbolic shape inference, opset attribute/input forms, hostile attribute values,
// dtypes the conformance cases do not use and data-dependent index errors.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "backends/ref/interpreter.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "runtime/session.h"

namespace nfuse {
namespace {

using backends::ref::evaluate_node;
using ir::Dim;
using ir::DType;
using ir::Shape;
using ir::Tensor;

// One node in its own graph. Inputs are tensors (their values are known to infer) or bare
// types (value unknown, for plan-time inference); an empty Tensor marks an omitted input.
struct OneNode {
  ir::Graph g;
  ir::Node* node = nullptr;
  std::vector<Tensor> ins;

  OneNode(const std::string& op, std::vector<Tensor> inputs, int outputs, ir::Attributes attrs = {},
          int opset = 17, std::vector<ir::TensorType> types = {})
      : ins(std::move(inputs)) {
    std::vector<ir::Value*> in_values, out_values;
    for (size_t i = 0; i < std::max(ins.size(), types.size()); ++i) {
      ir::TensorType t;
      if (i < ins.size() && !ins[i].empty()) t = {ins[i].dtype(), Shape::from_dims(ins[i].dims())};
      else if (i < types.size()) t = types[i];
      if (t.dtype == DType::kUndefined) {
        in_values.push_back(nullptr);
        continue;
      }
      in_values.push_back(g.add_value("in" + std::to_string(i), t).value());
    }
    for (int i = 0; i < outputs; ++i) out_values.push_back(g.add_value("out" + std::to_string(i)).value());
    node = g.add_node(op, "n", in_values, out_values, std::move(attrs));
    node->opset = opset;
  }
  std::vector<const Tensor*> pointers() const {
    std::vector<const Tensor*> p;
    for (const Tensor& t : ins) p.push_back(t.empty() ? nullptr : &t);
    return p;
  }
  Result<std::vector<Tensor>> run() const {
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::verify_node(*node));
    return evaluate_node(*node, pointers());
  }
  // Plan-time inference: only the given tensors' values are known.
  Result<std::vector<ir::TensorType>> infer(std::vector<Tensor>* values = nullptr) const {
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::verify_node(*node));
    std::vector<ir::TensorType> types;
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::infer_node(*node, pointers(), &types, values));
    return types;
  }
};

Tensor i64(std::vector<int64_t> v) {
  const auto n = static_cast<int64_t>(v.size());
  return Tensor::from_vector(v, {n});
}
Tensor i64_scalar(int64_t v) { return Tensor::from_vector(std::vector<int64_t>{v}, {}); }
Tensor f32(std::vector<float> v, std::vector<int64_t> dims) { return Tensor::from_vector(v, std::move(dims)); }
Tensor iota_f32(std::vector<int64_t> dims) {
  Tensor t = Tensor::allocate(DType::kF32, std::move(dims));
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(i);
  return t;
}
ir::Attributes attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  ir::Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}
std::vector<float> floats(const Tensor& t) { return t.to_float_vector(); }
std::vector<int64_t> ints(const Tensor& t) { return t.to_int_vector(); }

// --- Reshape family ------------------------------------------------------------------------

TEST(TensorOps, ReshapeCancelsSymbolicDims) {
  ir::TensorType x{DType::kF32, Shape({Dim::symbolic("batch"), Dim(12)})};
  OneNode n("Reshape", {Tensor(), i64({0, -1, 4})}, 1, {}, 17, {x});
  auto t = n.infer();
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ((*t)[0].shape, Shape({Dim::symbolic("batch"), Dim(3), Dim(4)}));
}

TEST(TensorOps, ReshapeUnknownTargetKeepsRank) {
  ir::TensorType x{DType::kF32, Shape({Dim(2), Dim(6)})};
  ir::TensorType shape{DType::kI64, Shape({Dim(3)})};
  OneNode n("Reshape", {}, 1, {}, 17, {x, shape});
  auto t = n.infer();
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_TRUE((*t)[0].shape.rank_known());
  EXPECT_EQ((*t)[0].shape.rank(), 3);
  EXPECT_FALSE((*t)[0].shape.is_static());
}

TEST(TensorOps, ReshapeAllowZeroAndErrors) {
  OneNode zero("Reshape", {Tensor::allocate(DType::kF32, {0, 3}), i64({3, 0})}, 1, attrs({{"allowzero", int64_t{1}}}));
  auto r = zero.run();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ((*r)[0].dims(), (std::vector<int64_t>{3, 0}));
  EXPECT_FALSE(OneNode("Reshape", {iota_f32({2, 3}), i64({-1, -1})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Reshape", {iota_f32({2, 3}), i64({4, -1})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Reshape", {iota_f32({2, 3}), i64({-2, 3})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Reshape", {iota_f32({2, 3}), i64({0, 0, 0})}, 1).run().ok());
  const int64_t huge = int64_t{1} << 40;
  EXPECT_FALSE(OneNode("Reshape", {iota_f32({2, 3}), i64({huge, huge, -1})}, 1).run().ok());
}

TEST(TensorOps, FlattenKeepsSymbolicBatch) {
  ir::TensorType x{DType::kF32, Shape({Dim::symbolic("n"), Dim(3), Dim(4)})};
  OneNode n("Flatten", {}, 1, {}, 17, {x});
  auto t = n.infer();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0].shape, Shape({Dim::symbolic("n"), Dim(12)}));
}

TEST(TensorOps, SqueezeAxesAttributeAndInput) {
  OneNode old_form("Squeeze", {iota_f32({1, 3, 1})}, 1, attrs({{"axes", std::vector<int64_t>{-1}}}), 11);
  auto a = old_form.run();
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ((*a)[0].dims(), (std::vector<int64_t>{1, 3}));
  OneNode new_form("Squeeze", {iota_f32({1, 3, 1}), i64({0})}, 1, {}, 13);
  auto b = new_form.run();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ((*b)[0].dims(), (std::vector<int64_t>{3, 1}));
  OneNode all("Squeeze", {iota_f32({1, 3, 1})}, 1, {}, 13);
  EXPECT_EQ((*all.run())[0].dims(), (std::vector<int64_t>{3}));
  EXPECT_FALSE(OneNode("Squeeze", {iota_f32({1, 3}), i64({1})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Squeeze", {iota_f32({1, 3}), i64({5})}, 1).run().ok());
}

TEST(TensorOps, UnsqueezeRejectsRepeatedAxes) {
  auto r = OneNode("Unsqueeze", {iota_f32({3}), i64({0, -1})}, 1).run();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims(), (std::vector<int64_t>{1, 3, 1}));
  EXPECT_FALSE(OneNode("Unsqueeze", {iota_f32({3}), i64({0, 0})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Unsqueeze", {iota_f32({3}), i64({2})}, 1).run().ok());
}

// --- Transpose, Concat, Split ------------------------------------------------------------------

TEST(TensorOps, TransposeF16AndBadPerm) {
  Tensor x = Tensor::allocate(DType::kF16, {2, 3});
  for (int64_t i = 0; i < 6; ++i) x.data<ir::Half>()[i] = ir::Half{ir::float_to_half(static_cast<float>(i))};
  auto r = OneNode("Transpose", {x}, 1).run();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(OneNode("Transpose", {x}, 1, attrs({{"perm", std::vector<int64_t>{0, 0}}})).run().ok());
  EXPECT_FALSE(OneNode("Transpose", {x}, 1, attrs({{"perm", std::vector<int64_t>{0, 2}}})).run().ok());
}

TEST(TensorOps, ConcatBoolAndMismatch) {
  Tensor a = Tensor::from_vector(std::vector<bool>{true, false}, {1, 2});
  Tensor b = Tensor::from_vector(std::vector<bool>{false, true, true, true}, {2, 2});
  auto r = OneNode("Concat", {a, b}, 1, attrs({{"axis", int64_t{0}}})).run();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(ints((*r)[0]), (std::vector<int64_t>{1, 0, 0, 1, 1, 1}));
  EXPECT_FALSE(OneNode("Concat", {a, b}, 1, attrs({{"axis", int64_t{1}}})).run().ok());
  EXPECT_FALSE(OneNode("Concat", {a, b}, 1, attrs({{"axis", int64_t{2}}})).run().ok());
}

TEST(TensorOps, SplitForms) {
  // opset 11: sizes as an attribute; opset 13: as an input; none: equal parts.
  OneNode attr("Split", {iota_f32({5})}, 2, attrs({{"split", std::vector<int64_t>{2, 3}}}), 11);
  auto a = attr.run();
  ASSERT_TRUE(a.ok()) << a.status().to_string();
  EXPECT_EQ(floats((*a)[1]), (std::vector<float>{2, 3, 4}));
  auto b = OneNode("Split", {iota_f32({2, 4}), i64({1, 3})}, 2, attrs({{"axis", int64_t{-1}}}), 13).run();
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(floats((*b)[0]), (std::vector<float>{0, 4}));
  EXPECT_EQ(floats((*b)[1]), (std::vector<float>{1, 2, 3, 5, 6, 7}));
  EXPECT_FALSE(OneNode("Split", {iota_f32({5})}, 2).run().ok());               // not divisible
  EXPECT_FALSE(OneNode("Split", {iota_f32({5}), i64({2, 2})}, 2).run().ok());  // wrong sum
  EXPECT_FALSE(OneNode("Split", {iota_f32({5}), i64({6, -1})}, 2).run().ok());
}

// --- Slice ---------------------------------------------------------------------------------

TEST(TensorOps, SliceClampsAndStepsBackwards) {
  const int64_t big = std::numeric_limits<int64_t>::max();
  const int64_t small = std::numeric_limits<int64_t>::min();
  // x[::-1] written with extreme bounds.
  auto r = OneNode("Slice", {iota_f32({5}), i64({big}), i64({small}), i64({0}), i64({-1})}, 1).run();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{4, 3, 2, 1, 0}));
  // x[3:0:-2] = [3, 1]
  auto s = OneNode("Slice", {iota_f32({5}), i64({3}), i64({0}), i64({0}), i64({-2})}, 1).run();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(floats((*s)[0]), (std::vector<float>{3, 1}));
  // Steps larger than the dim, and the most negative step, take one element.
  auto t = OneNode("Slice", {iota_f32({5}), i64({-1}), i64({small}), i64({0}), i64({small})}, 1).run();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(floats((*t)[0]), (std::vector<float>{4}));
  // Negative steps on an empty dim.
  auto e = OneNode("Slice", {iota_f32({0, 2}), i64({-1}), i64({small}), i64({0}), i64({-1})}, 1).run();
  ASSERT_TRUE(e.ok());
  EXPECT_EQ((*e)[0].dims(), (std::vector<int64_t>{0, 2}));
}

TEST(TensorOps, SliceOpset1AttributesAndErrors) {
  OneNode old_form("Slice", {iota_f32({3, 4})}, 1,
                   attrs({{"starts", std::vector<int64_t>{1}}, {"ends", std::vector<int64_t>{3}},
                          {"axes", std::vector<int64_t>{1}}}),
                   9);
  auto r = old_form.run();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{1, 2, 5, 6, 9, 10}));
  EXPECT_FALSE(OneNode("Slice", {iota_f32({5}), i64({0}), i64({5}), i64({0}), i64({0})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Slice", {iota_f32({5}), i64({0}), i64({5}), i64({3})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Slice", {iota_f32({5, 5}), i64({0, 0}), i64({5, 5}), i64({0, -2})}, 1).run().ok());
}

// --- Gather / Scatter ----------------------------------------------------------------------

TEST(TensorOps, GatherIndexOutOfRangeIsAnError) {
  auto ok = OneNode("Gather", {iota_f32({3, 2}), i64({-1, 0})}, 1).run();
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(floats((*ok)[0]), (std::vector<float>{4, 5, 0, 1}));
  EXPECT_FALSE(OneNode("Gather", {iota_f32({3, 2}), i64({3})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Gather", {iota_f32({3, 2}), i64({-4})}, 1).run().ok());
  EXPECT_FALSE(OneNode("GatherElements", {iota_f32({2, 2}), Tensor::from_vector(std::vector<int64_t>{0, 2}, {1, 2})}, 1)
                   .run()
                   .ok());
  EXPECT_FALSE(OneNode("GatherND", {iota_f32({2, 2}), Tensor::from_vector(std::vector<int64_t>{0, 5}, {1, 2})}, 1)
                   .run()
                   .ok());
}

TEST(TensorOps, ScatterReductions) {
  Tensor idx = Tensor::from_vector(std::vector<int64_t>{1, 1}, {2});
  Tensor upd = f32({2, 3}, {2});
  auto mul = OneNode("ScatterElements", {f32({1, 5, 1}, {3}), idx, upd}, 1, attrs({{"reduction", std::string("mul")}}))
                 .run();
  ASSERT_TRUE(mul.ok()) << mul.status().to_string();
  EXPECT_EQ(floats((*mul)[0]), (std::vector<float>{1, 30, 1}));
  Tensor nd_idx = Tensor::from_vector(std::vector<int64_t>{-1, 0}, {2, 1});
  auto add = OneNode("ScatterND", {f32({1, 1, 1}, {3}), nd_idx, upd}, 1, attrs({{"reduction", std::string("add")}}))
                 .run();
  ASSERT_TRUE(add.ok());
  EXPECT_EQ(floats((*add)[0]), (std::vector<float>{4, 1, 3}));
  EXPECT_FALSE(OneNode("ScatterElements", {f32({1, 1, 1}, {3}), i64({3, 0}), upd}, 1).run().ok());
  EXPECT_FALSE(OneNode("ScatterElements", {f32({1, 1, 1}, {3}), idx, upd}, 1,
                       attrs({{"reduction", std::string("avg")}}))
                   .run()
                   .ok());
}

// --- Shape, Size: values at plan time -----------------------------------------------------

TEST(TensorOps, ShapeAndSizeFoldWhenStatic) {
  ir::TensorType x{DType::kF32, Shape({Dim(2), Dim(3), Dim(5)})};
  std::vector<Tensor> values;
  auto t = OneNode("Shape", {}, 1, attrs({{"start", int64_t{-2}}}), 15, {x}).infer(&values);
  ASSERT_TRUE(t.ok());
  ASSERT_FALSE(values[0].empty());
  EXPECT_EQ(ints(values[0]), (std::vector<int64_t>{3, 5}));
  auto s = OneNode("Size", {}, 1, {}, 17, {x}).infer(&values);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ints(values[0]), (std::vector<int64_t>{30}));
  ir::TensorType dyn{DType::kF32, Shape({Dim::symbolic("n"), Dim(3)})};
  auto d = OneNode("Shape", {}, 1, attrs({{"start", int64_t{1}}}), 15, {dyn}).infer(&values);
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(ints(values[0]), (std::vector<int64_t>{3}));  // the static part still folds
  auto u = OneNode("Shape", {}, 1, {}, 15, {dyn}).infer(&values);
  ASSERT_TRUE(u.ok());
  EXPECT_TRUE(values[0].empty());
  EXPECT_EQ((*u)[0].shape, Shape({Dim(2)}));
}

// --- Expand, Tile, Pad: hostile sizes ------------------------------------------------------

TEST(TensorOps, HostileSizesAreRejected) {
  const int64_t huge = int64_t{1} << 40;
  EXPECT_FALSE(OneNode("Expand", {iota_f32({1}), i64({huge, huge})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Expand", {iota_f32({1}), i64({-3})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Expand", {iota_f32({2}), i64({3})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Tile", {iota_f32({2}), i64({-1})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Tile", {iota_f32({2, 2}), i64({huge, huge})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Pad", {iota_f32({2}), i64({huge, huge})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Pad", {iota_f32({2}), i64({-3, 0})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Pad", {iota_f32({2}), i64({1})}, 1).run().ok());
  EXPECT_FALSE(OneNode("ConstantOfShape", {i64({huge, huge})}, 1).run().ok());
  EXPECT_FALSE(OneNode("Range", {i64_scalar(0), i64_scalar(std::numeric_limits<int64_t>::max()), i64_scalar(1)}, 1)
                   .run()
                   .ok());
  EXPECT_FALSE(OneNode("Range", {i64_scalar(0), i64_scalar(5), i64_scalar(0)}, 1).run().ok());
  const ir::Attributes huge_block = attrs({{"blocksize", int64_t{1} << 40}});
  EXPECT_FALSE(OneNode("DepthToSpace", {iota_f32({1, 4, 1, 1})}, 1, huge_block).run().ok());
  EXPECT_FALSE(OneNode("DepthToSpace", {iota_f32({1, 4, 1, 1})}, 1, attrs({{"blocksize", int64_t{0}}})).run().ok());
  EXPECT_FALSE(OneNode("SpaceToDepth", {iota_f32({1, 1, 3, 3})}, 1, attrs({{"blocksize", int64_t{2}}})).run().ok());
}

TEST(TensorOps, PadModes) {
  // Reflect wider than the dim repeats periodically, like numpy: [0 1 2] -> 2 1 | 0 1 2 | 1 0 1 2.
  auto r = OneNode("Pad", {iota_f32({3}), i64({2, 4})}, 1, attrs({{"mode", std::string("reflect")}})).run();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{2, 1, 0, 1, 2, 1, 0, 1, 2}));
  auto e = OneNode("Pad", {iota_f32({3}), i64({1, -1})}, 1, attrs({{"mode", std::string("edge")}})).run();
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(floats((*e)[0]), (std::vector<float>{0, 0, 1}));
  // opset 2: pads and value as attributes; int32 data.
  Tensor xi = Tensor::from_vector(std::vector<int32_t>{7, 8}, {2});
  auto c = OneNode("Pad", {xi}, 1, attrs({{"pads", std::vector<int64_t>{1, 0}}, {"value", 5.0f}}), 2).run();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(ints((*c)[0]), (std::vector<int64_t>{5, 7, 8}));
  EXPECT_FALSE(OneNode("Pad", {iota_f32({0}), i64({1, 1})}, 1, attrs({{"mode", std::string("edge")}})).run().ok());
  EXPECT_FALSE(OneNode("Pad", {iota_f32({2}), i64({1, 1})}, 1, attrs({{"mode", std::string("wrap")}})).run().ok());
}

// --- Generators ----------------------------------------------------------------------------

TEST(TensorOps, ConstantForms) {
  auto ints_node = OneNode("Constant", {}, 1, attrs({{"value_ints", std::vector<int64_t>{4, 5}}})).run();
  ASSERT_TRUE(ints_node.ok()) << ints_node.status().to_string();
  EXPECT_EQ(ints((*ints_node)[0]), (std::vector<int64_t>{4, 5}));
  auto f = OneNode("Constant", {}, 1, attrs({{"value_float", 2.5f}})).run();
  ASSERT_TRUE(f.ok());
  EXPECT_EQ((*f)[0].rank(), 0);
  EXPECT_EQ(floats((*f)[0]), (std::vector<float>{2.5f}));
  EXPECT_FALSE(OneNode("Constant", {}, 1, attrs({{"value_string", std::string("x")}})).run().ok());
  EXPECT_FALSE(OneNode("Constant", {}, 1).run().ok());
  EXPECT_FALSE(OneNode("Constant", {}, 1, attrs({{"value_int", int64_t{1}}, {"value_float", 1.0f}})).run().ok());
}

TEST(TensorOps, RangeAndEyeLike) {
  auto r = OneNode("Range", {i64_scalar(10), i64_scalar(3), i64_scalar(-3)}, 1).run();
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(ints((*r)[0]), (std::vector<int64_t>{10, 7, 4}));
  auto empty = OneNode("Range", {i64_scalar(3), i64_scalar(10), i64_scalar(-3)}, 1).run();
  ASSERT_TRUE(empty.ok());
  EXPECT_EQ((*empty)[0].numel(), 0);
  auto eye = OneNode("EyeLike", {iota_f32({2, 3})}, 1, attrs({{"k", int64_t{-1}}, {"dtype", int64_t{7}}})).run();
  ASSERT_TRUE(eye.ok());
  EXPECT_EQ((*eye)[0].dtype(), DType::kI64);
  EXPECT_EQ(ints((*eye)[0]), (std::vector<int64_t>{0, 0, 0, 1, 0, 0}));
  auto far = OneNode("EyeLike", {iota_f32({2, 3})}, 1, attrs({{"k", std::numeric_limits<int64_t>::min()}})).run();
  ASSERT_TRUE(far.ok());
  EXPECT_EQ(floats((*far)[0]), (std::vector<float>(6, 0.0f)));
}

// --- TopK ----------------------------------------------------------------------------------

TEST(TensorOps, TopKTiesKeepSmallerIndexFirst) {
  Tensor x = f32({1, 3, 3, 2, 3}, {5});
  auto r = OneNode("TopK", {x, i64({3})}, 2).run();
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(floats((*r)[0]), (std::vector<float>{3, 3, 3}));
  EXPECT_EQ(ints((*r)[1]), (std::vector<int64_t>{1, 2, 4}));
  auto s = OneNode("TopK", {x, i64({2})}, 2, attrs({{"largest", int64_t{0}}})).run();
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(ints((*s)[1]), (std::vector<int64_t>{0, 3}));
  auto old_form = OneNode("TopK", {x}, 2, attrs({{"k", int64_t{1}}}), 1).run();
  ASSERT_TRUE(old_form.ok());
  EXPECT_EQ(ints((*old_form)[1]), (std::vector<int64_t>{1}));
  EXPECT_FALSE(OneNode("TopK", {x, i64({6})}, 2).run().ok());
  EXPECT_FALSE(OneNode("TopK", {x, i64({-1})}, 2).run().ok());
}

TEST(TensorOps, TopKUnknownKLeavesDimUnknown) {
  ir::TensorType x{DType::kF32, Shape({Dim(4), Dim(7)})};
  ir::TensorType k{DType::kI64, Shape({Dim(1)})};
  auto t = OneNode("TopK", {}, 2, {}, 17, {x, k}).infer();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0].shape, Shape({Dim(4), Dim()}));
  EXPECT_EQ((*t)[1].dtype, DType::kI64);
}

// --- Data-dependent output sizes -------------------------------------------------------------

TEST(TensorOps, NonZeroAndCompress) {
  auto nz = OneNode("NonZero", {f32({0, 2, 0, 3}, {2, 2})}, 1).run();
  ASSERT_TRUE(nz.ok());
  EXPECT_EQ((*nz)[0].dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(ints((*nz)[0]), (std::vector<int64_t>{0, 1, 1, 1}));
  ir::TensorType x{DType::kF32, Shape({Dim(3)})};
  auto t = OneNode("NonZero", {}, 1, {}, 17, {x}).infer();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0].shape, Shape({Dim(1), Dim()}));
  // Condition shorter than the axis: the rest is dropped.
  Tensor cond = Tensor::from_vector(std::vector<bool>{false, true}, {2});
  auto c = OneNode("Compress", {iota_f32({3, 2}), cond}, 1, attrs({{"axis", int64_t{0}}})).run();
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_EQ(floats((*c)[0]), (std::vector<float>{2, 3}));
}

TEST(TensorOps, ReverseSequenceRejectsBadLengths) {
  EXPECT_FALSE(OneNode("ReverseSequence", {iota_f32({2, 2}), i64({3, 1})}, 1).run().ok());
  EXPECT_FALSE(OneNode("ReverseSequence", {iota_f32({2, 2}), i64({1, 1})}, 1, attrs({{"batch_axis", int64_t{0}},
                                                                                       {"time_axis", int64_t{0}}}))
                   .run()
                   .ok());
}

// --- Through a session: a shape chain over a symbolic batch ----------------------------------

// y = Transpose(Reshape(x, Concat(Slice(Shape(x), 0, 1), [12]))): the Reshape target is only
// known at run time, so the runtime re-infers it per batch size.
TEST(TensorOps, SessionRunsShapeChainWithSymbolicBatch) {
  auto g = std::make_unique<ir::Graph>();
  g->name = "shape_chain";
  g->opsets[""] = 17;
  auto value = [&](const char* name, ir::TensorType t = {}) { return g->add_value(name, std::move(t)).value(); };
  auto constant = [&](const char* name, Tensor t) {
    ir::Value* v = value(name, {t.dtype(), Shape::from_dims(t.dims())});
    v->constant = std::move(t);
    return v;
  };
  ir::Value* x = value("x", {DType::kF32, Shape({Dim::symbolic("n"), Dim(3), Dim(4)})});
  ir::Value* y = value("y", {DType::kF32, Shape({Dim(12), Dim::symbolic("n")})});
  g->inputs().push_back(x);
  g->outputs().push_back(y);
  ir::Value* shape = value("shape");
  ir::Value* batch = value("batch");
  ir::Value* target = value("target");
  ir::Value* flat = value("flat");
  g->add_node("Shape", "shape", {x}, {shape});
  g->add_node("Slice", "slice", {shape, constant("zero", i64({0})), constant("one", i64({1}))}, {batch});
  g->add_node("Concat", "concat", {batch, constant("twelve", i64({12}))}, {target}, attrs({{"axis", int64_t{0}}}));
  g->add_node("Reshape", "reshape", {x, target}, {flat});
  g->add_node("Transpose", "transpose", {flat}, {y});
  for (const auto& n : g->nodes()) n->opset = 17;
  ASSERT_TRUE(g->topo_sort().ok());
  auto session = runtime::Session::create(std::move(g), {});
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  for (int64_t n : {2, 5}) {
    Tensor in = iota_f32({n, 3, 4});
    auto out = (*session)->run({{"x", in}});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{12, n}));
    // y[j][b] = x[b][j / 4][j % 4] = b * 12 + j
    for (int64_t j = 0; j < 12; ++j)
      for (int64_t b = 0; b < n; ++b) EXPECT_EQ((*out)[0].data<float>()[j * n + b], static_cast<float>(b * 12 + j));
  }
}

}  // namespace
}  // namespace nfuse
