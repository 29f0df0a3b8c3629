// Tests for the losses, NonMaxSuppression, GridSample, TfIdfVectorizer, RoiAlign, Det, the
// signal ops and Loop beyond the ONNX conformance cases: plan-time inference with unknown
// values, attribute forms and opsets the cases do not use, and hostile values that must give
// an error instead of a crash.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/ref/interpreter.h"
#include "backends/ref/ref_kernel.h"
#include "ir/graph.h"
#include "ir/op_registry.h"

namespace nfuse {
namespace {

using backends::ref::evaluate_node;
using ir::DType;
using ir::Shape;
using ir::Tensor;

// One node in its own graph. Inputs are tensors (values known) or, where `types` gives a type
// and the tensor is empty, values unknown to infer; an omitted input has neither.
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
  Result<std::vector<ir::TensorType>> infer() const {
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::verify_node(*node));
    std::vector<ir::TensorType> types;
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::infer_node(*node, pointers(), &types));
    return types;
  }
};

Tensor f32(std::vector<float> v, std::vector<int64_t> dims) { return Tensor::from_vector(v, std::move(dims)); }
Tensor i64(std::vector<int64_t> v, std::vector<int64_t> dims) { return Tensor::from_vector(v, std::move(dims)); }
Tensor i64_scalar(int64_t v) { return Tensor::from_vector(std::vector<int64_t>{v}, {}); }
ir::TensorType type(DType t, std::vector<ir::Dim> dims) { return {t, Shape(std::move(dims))}; }
ir::Attributes attrs(std::initializer_list<std::pair<const char*, ir::AttrValue>> kv) {
  ir::Attributes a;
  for (const auto& [k, v] : kv) a.set(k, v);
  return a;
}
void expect_near(const Tensor& t, const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_EQ(t.numel(), static_cast<int64_t>(want.size())) << ir::dims_to_string(t.dims());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(t.get_double(static_cast<int64_t>(i)), want[i], tol * (std::fabs(want[i]) + 1)) << "at " << i;
  }
}

// ---------------------------------------------------------------- losses

TEST(NegativeLogLikelihoodLoss, InfersFromTargetOrInputAndRejectsBadAttributes) {
  const ir::Dim n = ir::Dim::symbolic("n");
  OneNode none("NegativeLogLikelihoodLoss", {}, 1, attrs({{"reduction", std::string("none")}}), 13,
               {type(DType::kF32, {n, 5, 7}), type(DType::kI64, {ir::Dim(), 7})});
  auto t = none.infer();
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[n,7]");
  OneNode mean("NegativeLogLikelihoodLoss", {}, 1, {}, 13,
               {type(DType::kF64, {n, 5}), type(DType::kI32, {n})});
  t = mean.infer();
  ASSERT_TRUE(t.ok());
  EXPECT_EQ((*t)[0].to_string(), "f64[]");
  OneNode bad("NegativeLogLikelihoodLoss", {}, 1, attrs({{"reduction", std::string("avg")}}), 13,
              {type(DType::kF32, {2, 3}), type(DType::kI64, {2})});
  EXPECT_FALSE(bad.infer().ok());
  OneNode rank("NegativeLogLikelihoodLoss", {}, 1, {}, 13, {type(DType::kF32, {2, 3, 4}), type(DType::kI64, {2})});
  EXPECT_FALSE(rank.infer().ok());
}

TEST(NegativeLogLikelihoodLoss, WeightsIgnoreIndexAndOutOfRangeTargets) {
  Tensor x = f32({-1, -2, -3, -4, -5, -6}, {2, 3});
  Tensor w = f32({1, 2, 4}, {3});
  // targets 2 and 1: losses 3 * 4 and 5 * 2; mean divides by the weights 4 + 2.
  OneNode mean("NegativeLogLikelihoodLoss", {x, i64({2, 1}, {2}), w}, 1, {}, 13);
  auto out = mean.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {22.0 / 6.0});
  // ignore_index 1 drops the second element from the sum and the weights.
  OneNode ignore("NegativeLogLikelihoodLoss", {x, i64({2, 1}, {2}), w}, 1, attrs({{"ignore_index", int64_t{1}}}), 13);
  out = ignore.run();
  ASSERT_TRUE(out.ok());
  expect_near((*out)[0], {3.0});
  // A target outside [0, C) that is not ignore_index is an error, never a read out of bounds.
  for (int64_t bad : {int64_t{3}, int64_t{-1}, int64_t{1} << 40}) {
    OneNode oob("NegativeLogLikelihoodLoss", {x, i64({0, bad}, {2})}, 1, {}, 13);
    EXPECT_FALSE(oob.run().ok()) << bad;
  }
}

TEST(SoftmaxCrossEntropyLoss, LogProbOutputIsLogSoftmaxOverAxisOne) {
  Tensor x = f32({0, 0, 1, 3}, {2, 2});  // [N=2, C=2]
  OneNode n("SoftmaxCrossEntropyLoss", {x, i64({0, 1}, {2})}, 2, attrs({{"reduction", std::string("sum")}}), 13);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const double l2 = std::log(2.0), l = std::log(1 + std::exp(2.0));
  expect_near((*out)[1], {-l2, -l2, -l, 2 - l});
  expect_near((*out)[0], {l2 + (l - 2)});
}

// ---------------------------------------------------------------- NonMaxSuppression

TEST(NonMaxSuppression, OutputLengthIsKnownOnlyWithAllValues) {
  Tensor boxes = f32({0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 10, 1, 11}, {1, 3, 4});
  Tensor scores = f32({0.9f, 0.8f, 0.7f}, {1, 1, 3});
  OneNode unknown("NonMaxSuppression", {Tensor(), Tensor(), i64({3}, {1})}, 1, {}, 11,
                  {type(DType::kF32, {1, 3, 4}), type(DType::kF32, {1, 1, 3})});
  auto t = unknown.infer();
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ((*t)[0].to_string(), "i64[?,3]");
  OneNode known("NonMaxSuppression", {boxes, scores, i64({3}, {1}), f32({0.5f}, {1})}, 1, {}, 11);
  auto out = known.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ((*out)[0].to_int_vector(), (std::vector<int64_t>{0, 0, 0, 0, 0, 2}));
  // Without max_output_boxes_per_class nothing is selected.
  OneNode none("NonMaxSuppression", {boxes, scores}, 1, {}, 11);
  out = none.run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{0, 3}));
  OneNode mismatch("NonMaxSuppression", {boxes, f32({1, 2}, {1, 1, 2}), i64({3}, {1})}, 1, {}, 11);
  EXPECT_FALSE(mismatch.run().ok());
}

// ---------------------------------------------------------------- GridSample

TEST(GridSample, AlignedIdentityGridReproducesInputAndFarCoordinatesStayInside) {
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {1, 1, 2, 3});
  // align_corners: -1 and 1 are the corner pixel centres.
  Tensor grid = f32({-1, -1, 0, -1, 1, -1, -1, 1, 0, 1, 1, 1}, {1, 2, 3, 2});
  for (const char* mode : {"bilinear", "nearest", "bicubic"}) {
    OneNode n("GridSample", {x, grid}, 1, attrs({{"align_corners", int64_t{1}}, {"mode", std::string(mode)}}), 16);
    auto out = n.run();
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_near((*out)[0], {1, 2, 3, 4, 5, 6}, 1e-5);
  }
  Tensor far = f32({1e30f, -1e30f, NAN, 0.5f}, {1, 1, 2, 2});
  for (const char* pad : {"zeros", "border", "reflection"}) {
    OneNode n("GridSample", {x, far}, 1, attrs({{"padding_mode", std::string(pad)}}), 16);
    EXPECT_TRUE(n.run().ok()) << pad;
  }
  OneNode bad("GridSample", {x, grid}, 1, attrs({{"mode", std::string("area")}}), 16);
  EXPECT_FALSE(bad.run().ok());
}

// ---------------------------------------------------------------- TfIdfVectorizer

TEST(TfIdfVectorizer, IdfAndTfidfModesUseWeights) {
  // Pool: unigrams 7, 8; bigram (7, 8). Output indexes 0, 1, 2.
  auto make = [](const char* mode) {
    return attrs({{"mode", std::string(mode)}, {"min_gram_length", int64_t{1}}, {"max_gram_length", int64_t{2}},
                  {"max_skip_count", int64_t{0}}, {"ngram_counts", std::vector<int64_t>{0, 2}},
                  {"ngram_indexes", std::vector<int64_t>{0, 1, 2}}, {"pool_int64s", std::vector<int64_t>{7, 8, 7, 8}},
                  {"weights", std::vector<float>{0.5f, 2.0f, 3.0f}}});
  };
  Tensor x = Tensor::from_vector(std::vector<int32_t>{7, 8, 7, 8, 7}, {5});
  OneNode tf("TfIdfVectorizer", {x}, 1, make("TF"), 9);
  auto out = tf.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {3, 2, 2});
  OneNode idf("TfIdfVectorizer", {x}, 1, make("IDF"), 9);
  out = idf.run();
  ASSERT_TRUE(out.ok());
  expect_near((*out)[0], {0.5, 2, 3});
  OneNode tfidf("TfIdfVectorizer", {x}, 1, make("TFIDF"), 9);
  out = tfidf.run();
  ASSERT_TRUE(out.ok());
  expect_near((*out)[0], {1.5, 4, 6});
  ir::Attributes bad = make("TF");
  bad.set("ngram_counts", std::vector<int64_t>{0, 3});  // splits the bigram block mid-gram
  OneNode broken("TfIdfVectorizer", {x}, 1, bad, 9);
  EXPECT_FALSE(broken.run().ok());
}

// ---------------------------------------------------------------- RoiAlign

TEST(RoiAlign, ConstantMapPoolsToTheConstantAndBadBatchIndexFails) {
  Tensor x = f32(std::vector<float>(16, 2.5f), {1, 1, 4, 4});
  Tensor rois = f32({0, 0, 3, 3}, {1, 4});
  for (const char* mode : {"avg", "max"}) {
    OneNode n("RoiAlign", {x, rois, i64({0}, {1})}, 1,
              attrs({{"mode", std::string(mode)}, {"output_height", int64_t{2}}, {"output_width", int64_t{2}},
                     {"sampling_ratio", int64_t{2}}}), 16);
    auto out = n.run();
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    // max takes the largest weighted corner term, as onnxruntime does, so it is below 2.5.
    if (std::string(mode) == "avg") expect_near((*out)[0], {2.5, 2.5, 2.5, 2.5});
    EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 1, 2, 2}));
  }
  OneNode bad("RoiAlign", {x, rois, i64({1}, {1})}, 1, {}, 16);
  EXPECT_FALSE(bad.run().ok());
  OneNode nan("RoiAlign", {x, f32({0, 0, NAN, 3}, {1, 4}), i64({0}, {1})}, 1, {}, 16);
  EXPECT_FALSE(nan.run().ok());
}

// ---------------------------------------------------------------- Det

TEST(Det, BatchedWithPivotingAndSingular) {
  Tensor x = f32({0, 1, 1, 0, 2, 0, 0, 3, 1, 2, 2, 4}, {3, 2, 2});
  OneNode n("Det", {x}, 1, {}, 11);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {-1, 6, 0});
  OneNode not_square("Det", {f32({1, 2}, {1, 2})}, 1, {}, 11);
  EXPECT_FALSE(not_square.run().ok());
}

// ---------------------------------------------------------------- signal ops

TEST(Windows, SizeFromValueAndKnownValues) {
  OneNode unknown("HannWindow", {}, 1, {}, 17, {type(DType::kI64, {})});
  auto t = unknown.infer();
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[?]");
  OneNode hann("HannWindow", {i64_scalar(4)}, 1, {}, 17);
  auto out = hann.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {0, 0.5, 1, 0.5});
  OneNode f64("BlackmanWindow", {i64_scalar(3)}, 1, attrs({{"output_datatype", int64_t{11}}, {"periodic", int64_t{0}}}), 17);
  out = f64.run();
  ASSERT_TRUE(out.ok());
  EXPECT_EQ((*out)[0].dtype(), DType::kF64);
  expect_near((*out)[0], {0, 1, 0}, 1e-9);
  OneNode negative("HammingWindow", {i64_scalar(-1)}, 1, {}, 17);
  EXPECT_FALSE(negative.run().ok());
}

TEST(DFT, ImpulseOnesidedInverseAndOpset20Axis) {
  Tensor impulse = f32({1, 0, 0, 0}, {1, 4, 1});
  OneNode fwd("DFT", {impulse}, 1, attrs({{"onesided", int64_t{1}}}), 17);
  auto out = fwd.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 3, 2}));
  expect_near((*out)[0], {1, 0, 1, 0, 1, 0});
  // The inverse of the full forward transform gives the signal back.
  Tensor x = f32({1, 2, 3, 4, 5, 6}, {1, 3, 2});
  OneNode full("DFT", {x}, 1, {}, 17);
  out = full.run();
  ASSERT_TRUE(out.ok());
  OneNode inv("DFT", {(*out)[0]}, 1, attrs({{"inverse", int64_t{1}}}), 17);
  auto back = inv.run();
  ASSERT_TRUE(back.ok());
  expect_near((*back)[0], {1, 2, 3, 4, 5, 6}, 1e-5);
  // Opset 20: axis is input 2 (here the batch axis 0 of a [4, 1, 1] signal), dft_length pads.
  OneNode v20("DFT", {f32({1, 0, 0, 0}, {4, 1, 1}), i64_scalar(8), i64_scalar(0)}, 1, {}, 20);
  out = v20.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  EXPECT_EQ((*out)[0].dims(), (std::vector<int64_t>{8, 1, 2}));
  OneNode complex_axis("DFT", {impulse}, 1, attrs({{"axis", int64_t{2}}}), 17);
  EXPECT_FALSE(complex_axis.run().ok());
}

TEST(STFT, FramesAndBinsFromValues) {
  OneNode n("STFT", {f32(std::vector<float>(10, 1.0f), {1, 10, 1}), i64_scalar(3), Tensor(), i64_scalar(4)}, 1, {}, 17);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 3, 3, 2}));
  expect_near((*out)[0], {4, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0});
  OneNode unknown("STFT", {Tensor(), Tensor(), Tensor(), i64_scalar(4)}, 1, {}, 17,
                  {type(DType::kF32, {2, 10, 1}), type(DType::kI64, {})});
  auto t = unknown.infer();
  ASSERT_TRUE(t.ok()) << t.status().to_string();
  EXPECT_EQ((*t)[0].to_string(), "f32[2,?,3,2]");
}

// ---------------------------------------------------------------- Loop

// Body: (i, cond, acc) -> (cond' = i < 2 when `use_cond`, acc' = acc + x, scan = acc'), where x
// is an outer-scope f32[2].
struct LoopGraph {
  ir::Graph g;
  ir::Node* node = nullptr;

  explicit LoopGraph(bool with_m, bool with_cond) {
    g.opsets[""] = 13;
    ir::TensorType vec{DType::kF32, Shape({ir::Dim(2)})};
    ir::Value* m = with_m ? g.add_value("m", type(DType::kI64, {})).value() : nullptr;
    ir::Value* c = with_cond ? g.add_value("c", type(DType::kBool, {})).value() : nullptr;
    ir::Value* init = g.add_value("init", vec).value();
    ir::Value* x = g.add_value("x", vec).value();
    ir::Value* final_acc = g.add_value("final").value();
    ir::Value* stacked = g.add_value("stacked").value();
    std::vector<ir::Value*> inputs;
    for (ir::Value* v : {m, c}) if (v) inputs.push_back(v);
    inputs.push_back(init);
    inputs.push_back(x);
    g.inputs() = inputs;
    g.outputs() = {final_acc, stacked};
    auto body = std::make_shared<ir::Graph>();
    body->name = "body";
    ir::Value* i = body->add_value("i", type(DType::kI64, {})).value();
    ir::Value* cond_in = body->add_value("cond_in", type(DType::kBool, {})).value();
    ir::Value* acc = body->add_value("acc", vec).value();
    ir::Value* ox = body->add_value("x", vec).value();
    ox->is_outer_ref = true;
    ir::Value* two = body->add_value("two", type(DType::kI64, {})).value();
    two->constant = i64_scalar(2);
    ir::Value* cond_out = body->add_value("cond_out").value();
    ir::Value* acc_out = body->add_value("acc_out").value();
    ir::Value* scan_out = body->add_value("scan_out").value();
    body->add_node("Less", "less", {i, two}, {cond_out})->opset = 13;
    body->add_node("Add", "add", {acc, ox}, {acc_out})->opset = 13;
    body->add_node("Identity", "id", {acc_out}, {scan_out})->opset = 13;
    body->inputs() = {i, cond_in, acc};
    body->outputs() = {cond_out, acc_out, scan_out};
    body->relink();
    ir::Attributes at;
    at.set("body", body);
    node = g.add_node("Loop", "loop", {m, c, init}, {final_acc, stacked}, at);
    node->opset = 13;
    node->implicit_inputs = {x};
    g.relink();
  }
};

bool loop_deps_registered() {
  for (const char* op : {"Less", "Add", "Identity"})
    if (!backends::ref::KernelRegistry::global().find(op)) return false;
  return true;
}

TEST(Loop, InfersCarriedShapesAndUnknownTripCount) {
  ASSERT_TRUE(loop_deps_registered()) << "Loop's body ops (Less, Add, Identity) must be registered";
  LoopGraph lg(true, true);
  ASSERT_TRUE(ir::verify_node(*lg.node).ok());
  std::vector<ir::TensorType> types;
  Status s = ir::infer_node(*lg.node, {}, &types);
  ASSERT_TRUE(s.ok()) << s.to_string();
  EXPECT_EQ(types[0].to_string(), "f32[2]");
  EXPECT_EQ(types[1].to_string(), "f32[?,2]");
}

TEST(Loop, TripCountCondAndZeroIterations) {
  ASSERT_TRUE(loop_deps_registered()) << "Loop's body ops (Less, Add, Identity) must be registered";
  Tensor init = f32({0, 0}, {2});
  Tensor x = f32({1, 10}, {2});
  Tensor yes = Tensor::from_vector(std::vector<bool>{true}, {});
  Tensor no = Tensor::from_vector(std::vector<bool>{false}, {});
  {  // cond stops after i = 2 (three iterations) although M allows 5.
    LoopGraph lg(true, true);
    auto out = backends::ref::interpret_graph(lg.g, {i64_scalar(5), yes, init, x});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_near((*out)[0], {3, 30});
    ASSERT_EQ((*out)[1].dims(), (std::vector<int64_t>{3, 2}));
    expect_near((*out)[1], {1, 10, 2, 20, 3, 30});
  }
  {  // Without a cond input the body's cond output is ignored: M iterations run.
    LoopGraph lg(true, false);
    auto out = backends::ref::interpret_graph(lg.g, {i64_scalar(4), init, x});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_near((*out)[0], {4, 40});
  }
  {  // A false initial cond runs nothing: the initial value and an empty stack come out.
    LoopGraph lg(true, true);
    auto out = backends::ref::interpret_graph(lg.g, {i64_scalar(5), no, init, x});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    expect_near((*out)[0], {0, 0});
    EXPECT_EQ((*out)[1].dims(), (std::vector<int64_t>{0, 2}));
  }
}

TEST(Loop, RejectsBodyArityMismatch) {
  LoopGraph lg(true, true);
  lg.node->inputs.push_back(lg.node->inputs.back());  // two carried values for a one-value body
  EXPECT_FALSE(ir::verify_node(*lg.node).ok());
}

}  // namespace
}  // namespace nfuse
