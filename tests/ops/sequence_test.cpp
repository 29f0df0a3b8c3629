// Tests for the sequence family: RNN/GRU/LSTM, Resize/Upsample and If, on hand-built nodes run
// through the reference kernels (evaluate_node infers, allocates and runs like the runtime).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "backends/ref/interpreter.h"
#include "backends/ref/ref_kernel.h"
#include "ir/graph.h"
#include "ir/op_registry.h"
#include "runtime/session.h"

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

  OneNode(const std::string& op, std::vector<Tensor> inputs, int outputs, ir::Attributes attrs = {}, int opset = 14)
      : ins(std::move(inputs)) {
    std::vector<ir::Value*> in_values, out_values;
    for (size_t i = 0; i < ins.size(); ++i) {
      if (ins[i].empty()) {
        in_values.push_back(nullptr);
        continue;
      }
      ir::TensorType t{ins[i].dtype(), ir::Shape::from_dims(ins[i].dims())};
      in_values.push_back(g.add_value("in" + std::to_string(i), t).value());
    }
    for (int i = 0; i < outputs; ++i) out_values.push_back(g.add_value("out" + std::to_string(i)).value());
    node = g.add_node(op, "n", in_values, out_values, std::move(attrs));
    node->opset = opset;
  }
  Result<std::vector<Tensor>> run() const {
    std::vector<const Tensor*> p;
    for (const Tensor& t : ins) p.push_back(t.empty() ? nullptr : &t);
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::verify_node(*node));
    return evaluate_node(*node, p);
  }
};

Tensor f32(std::vector<float> v, std::vector<int64_t> dims) { return Tensor::from_vector(v, std::move(dims)); }

// Deterministic pseudo-random values in [-1, 1) (seed printed by the failing test's name).
std::vector<float> values(size_t n, uint32_t seed) {
  std::vector<float> v(n);
  for (auto& x : v) {
    seed = seed * 1664525u + 1013904223u;
    x = static_cast<float>(seed >> 8) / static_cast<float>(1u << 24) * 2.0f - 1.0f;
  }
  return v;
}

void expect_near(const Tensor& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(want.size()));
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(got.data<float>()[i], want[i], tol) << "first mismatch at index " << i;
    if (std::fabs(got.data<float>()[i] - want[i]) > tol) return;
  }
}

double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

// ---------------------------------------------------------------- RNN / GRU / LSTM

TEST(Rnn, SimpleRnnMatchesHandComputation) {
  // hidden 1, input 1: h_t = tanh(w*x_t + r*h_{t-1} + wb + rb).
  OneNode n("RNN", {f32({0.5f, -1.0f}, {2, 1, 1}), f32({0.7f}, {1, 1, 1}), f32({0.3f}, {1, 1, 1}),
                    f32({0.1f, 0.2f}, {1, 2})},
            2, {});
  n.node->attrs.set("hidden_size", int64_t{1});
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  const double h1 = std::tanh(0.7 * 0.5 + 0.3);
  const double h2 = std::tanh(0.7 * -1.0 + 0.3 * h1 + 0.3);
  expect_near((*out)[0], {static_cast<float>(h1), static_cast<float>(h2)});
  expect_near((*out)[1], {static_cast<float>(h2)});
}

TEST(Rnn, LstmHandComputedStepWithPeepholesAndInputForget) {
  // hidden 1, input 1, one step from initial state h0=0.2, c0=-0.4.
  const float w[4] = {0.1f, 0.2f, 0.3f, 0.4f}, r[4] = {-0.5f, 0.6f, -0.7f, 0.8f}, p[3] = {0.05f, -0.1f, 0.15f};
  const double x = 0.9, h0 = 0.2, c0 = -0.4;
  for (int64_t input_forget : {0, 1}) {
    OneNode n("LSTM",
              {f32({0.9f}, {1, 1, 1}), f32({w[0], w[1], w[2], w[3]}, {1, 4, 1}), f32({r[0], r[1], r[2], r[3]}, {1, 4, 1}),
               Tensor(), Tensor(), f32({0.2f}, {1, 1, 1}), f32({-0.4f}, {1, 1, 1}), f32({p[0], p[1], p[2]}, {1, 3})},
              3);
    n.node->attrs.set("hidden_size", int64_t{1});
    n.node->attrs.set("input_forget", input_forget);
    auto out = n.run();
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    auto pre = [&](int g) { return double(w[g]) * x + double(r[g]) * h0; };  // gates i o f c
    const double i = sigmoid(pre(0) + double(p[0]) * c0);
    const double f = input_forget ? 1.0 - i : sigmoid(pre(2) + double(p[2]) * c0);
    const double c = f * c0 + i * std::tanh(pre(3));
    const double o = sigmoid(pre(1) + double(p[1]) * c);
    const double h = o * std::tanh(c);
    expect_near((*out)[0], {static_cast<float>(h)});
    expect_near((*out)[1], {static_cast<float>(h)});
    expect_near((*out)[2], {static_cast<float>(c)});
  }
}

TEST(Rnn, GruLinearBeforeResetDiffersOnlyWithRecurrentBias) {
  const double x = 0.4, h0 = -0.6, wz = 0.3, wr = -0.2, wh = 0.5, rz = 0.1, rr = 0.7, rh = -0.9, rbh = 0.25;
  for (int64_t lbr : {0, 1}) {
    OneNode n("GRU",
              {f32({0.4f}, {1, 1, 1}), f32({0.3f, -0.2f, 0.5f}, {1, 3, 1}), f32({0.1f, 0.7f, -0.9f}, {1, 3, 1}),
               f32({0, 0, 0, 0, 0, 0.25f}, {1, 6}), Tensor(), f32({-0.6f}, {1, 1, 1})},
              2);
    n.node->attrs.set("hidden_size", int64_t{1});
    n.node->attrs.set("linear_before_reset", lbr);
    auto out = n.run();
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    const double z = sigmoid(wz * x + rz * h0), r = sigmoid(wr * x + rr * h0);
    const double hh = lbr ? std::tanh(wh * x + r * (rh * h0 + rbh)) : std::tanh(wh * x + rh * (r * h0) + rbh);
    expect_near((*out)[1], {static_cast<float>((1 - z) * hh + z * h0)});
  }
}

// Bidirectional = forward run and reverse run side by side; layout 1 is a transpose of layout 0;
// entries past a batch entry's sequence length stay zero and Y_h holds the last valid step.
TEST(Rnn, BidirectionalLayoutAndSequenceLens) {
  const int64_t seq = 3, batch = 2, in = 2, hid = 3, g = 4;
  const auto x = values(seq * batch * in, 1), w = values(2 * g * hid * in, 2), r = values(2 * g * hid * hid, 3),
             b = values(2 * 2 * g * hid, 4);
  const std::vector<int32_t> lens = {3, 2};
  auto run = [&](const std::string& dir, int64_t dirs, int64_t layout, size_t first_dir) {
    std::vector<float> xx = x;
    if (layout == 1) {  // [seq, batch, in] -> [batch, seq, in]
      for (int64_t t = 0; t < seq; ++t)
        for (int64_t bi = 0; bi < batch; ++bi)
          for (int64_t k = 0; k < in; ++k) xx[size_t((bi * seq + t) * in + k)] = x[size_t((t * batch + bi) * in + k)];
    }
    auto slice = [&](const std::vector<float>& v, size_t per_dir) {
      return std::vector<float>(v.begin() + long(first_dir * per_dir), v.begin() + long((first_dir + size_t(dirs)) * per_dir));
    };
    OneNode n("LSTM",
              {f32(xx, layout ? std::vector<int64_t>{batch, seq, in} : std::vector<int64_t>{seq, batch, in}),
               f32(slice(w, g * hid * in), {dirs, g * hid, in}), f32(slice(r, g * hid * hid), {dirs, g * hid, hid}),
               f32(slice(b, 2 * g * hid), {dirs, 2 * g * hid}), Tensor::from_vector(lens, {batch})},
              3);
    n.node->attrs.set("hidden_size", hid);
    n.node->attrs.set("direction", dir);
    n.node->attrs.set("layout", layout);
    auto out = n.run();
    EXPECT_TRUE(out.ok()) << out.status().to_string();
    return std::move(out).value();
  };
  auto bi = run("bidirectional", 2, 0, 0);
  auto fw = run("forward", 1, 0, 0);
  auto rv = run("reverse", 1, 0, 1);
  ASSERT_EQ(bi[0].dims(), (std::vector<int64_t>{seq, 2, batch, hid}));
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t b2 = 0; b2 < batch; ++b2)
      for (int64_t j = 0; j < hid; ++j) {
        const float f = fw[0].data<float>()[(t * batch + b2) * hid + j];
        const float v = rv[0].data<float>()[(t * batch + b2) * hid + j];
        EXPECT_EQ(bi[0].data<float>()[((t * 2 + 0) * batch + b2) * hid + j], f);
        EXPECT_EQ(bi[0].data<float>()[((t * 2 + 1) * batch + b2) * hid + j], v);
        if (t >= lens[size_t(b2)]) {
          EXPECT_EQ(f, 0.0f);
        }
      }
  // Y_h of the forward direction for batch 1 (length 2) is Y at t = 1; of the reverse, Y at t = 0.
  for (int64_t j = 0; j < hid; ++j) {
    EXPECT_EQ(fw[1].data<float>()[1 * hid + j], fw[0].data<float>()[(1 * batch + 1) * hid + j]);
    EXPECT_EQ(rv[1].data<float>()[1 * hid + j], rv[0].data<float>()[(0 * batch + 1) * hid + j]);
  }
  auto bm = run("bidirectional", 2, 1, 0);
  ASSERT_EQ(bm[0].dims(), (std::vector<int64_t>{batch, seq, 2, hid}));
  ASSERT_EQ(bm[1].dims(), (std::vector<int64_t>{batch, 2, hid}));
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t b2 = 0; b2 < batch; ++b2)
      for (int64_t d = 0; d < 2; ++d)
        for (int64_t j = 0; j < hid; ++j)
          EXPECT_NEAR(bm[0].data<float>()[((b2 * seq + t) * 2 + d) * hid + j],
                      bi[0].data<float>()[((t * 2 + d) * batch + b2) * hid + j], 1e-6f);
}

TEST(Rnn, ActivationsAttributeWithAlpha) {
  // LeakyRelu(alpha=0.5) on a negative pre-activation: h = 0.5 * (w * x).
  OneNode n("RNN", {f32({-2.0f}, {1, 1, 1}), f32({1.5f}, {1, 1, 1}), f32({0.0f}, {1, 1, 1})}, 2);
  n.node->attrs.set("hidden_size", int64_t{1});
  n.node->attrs.set("activations", std::vector<std::string>{"LeakyRelu"});
  n.node->attrs.set("activation_alpha", std::vector<float>{0.5f});
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[1], {-1.5f});
}

TEST(Rnn, RejectsBadAttributesAndShapes) {
  auto make = [](std::vector<int64_t> wdims) {
    return std::make_unique<OneNode>("GRU",
                                     std::vector<Tensor>{f32({}, {1, 1, 2}), Tensor::allocate(DType::kF32, wdims),
                                                         Tensor::allocate(DType::kF32, {1, 9, 3})},
                                     2);
  };
  auto good = make({1, 9, 2});
  good->node->attrs.set("hidden_size", int64_t{3});
  EXPECT_TRUE(good->run().ok());
  auto bad_w = make({1, 9, 5});
  bad_w->node->attrs.set("hidden_size", int64_t{3});
  EXPECT_FALSE(bad_w->run().ok());
  auto bad_dir = make({1, 9, 2});
  bad_dir->node->attrs.set("direction", std::string("sideways"));
  EXPECT_FALSE(bad_dir->run().ok());
  auto bad_act = make({1, 9, 2});
  bad_act->node->attrs.set("activations", std::vector<std::string>{"Sigmoid", "Nope"});
  EXPECT_FALSE(bad_act->run().ok());
  auto bad_hidden = make({1, 9, 2});
  bad_hidden->node->attrs.set("hidden_size", int64_t{-3});
  EXPECT_FALSE(bad_hidden->run().ok());
  OneNode bad_lens("RNN",
                   {f32({1, 2}, {2, 1, 1}), f32({1}, {1, 1, 1}), f32({1}, {1, 1, 1}), Tensor(),
                    Tensor::from_vector(std::vector<int32_t>{7}, {1})},
                   1);
  EXPECT_FALSE(bad_lens.run().ok());
}

// ---------------------------------------------------------------- Resize / Upsample

Tensor scales(std::vector<float> s) {
  const int64_t n = static_cast<int64_t>(s.size());
  return f32(std::move(s), {n});
}

TEST(Resize, NearestUpsampleAsymmetricFloor) {
  ir::Attributes at;
  at.set("coordinate_transformation_mode", std::string("asymmetric"));
  at.set("nearest_mode", std::string("floor"));
  OneNode n("Resize", {f32({1, 2, 3, 4}, {1, 1, 2, 2}), Tensor(), scales({1, 1, 2, 1.5f})}, 1, at, 13);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 1, 4, 3}));
  expect_near((*out)[0], {1, 1, 2, 1, 1, 2, 3, 3, 4, 3, 3, 4});
}

TEST(Resize, LinearAlignCornersUsesScaledLength) {
  // The ONNX reference measures the resized length as scale * length (2.4 here), not 2.
  ir::Attributes at;
  at.set("mode", std::string("linear"));
  at.set("coordinate_transformation_mode", std::string("align_corners"));
  OneNode n("Resize", {f32({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4}), Tensor(), scales({1, 1, 0.6f, 0.6f})}, 1, at, 13);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dims(), (std::vector<int64_t>{1, 1, 1, 2}));
  expect_near((*out)[0], {1.0f, 1.0f + 3.0f / 1.4f});
}

TEST(Resize, SizesHalfPixelLinearOnOneDim) {
  ir::Attributes at;
  at.set("mode", std::string("linear"));
  OneNode n("Resize", {f32({0, 10}, {2}), Tensor(), Tensor(), Tensor::from_vector(std::vector<int64_t>{4}, {1})}, 1, at,
            13);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  // x_orig = (x + 0.5) / 2 - 0.5: -0.25 (edge), 0.25, 0.75, 1.25 (edge).
  expect_near((*out)[0], {0, 2.5f, 7.5f, 10});
}

TEST(Resize, CubicExcludeOutsideRenormalises) {
  ir::Attributes at;
  at.set("mode", std::string("cubic"));
  at.set("exclude_outside", int64_t{1});
  at.set("cubic_coeff_a", -0.5f);
  OneNode n("Resize", {f32({3, 3, 3}, {3}), Tensor(), scales({2})}, 1, at, 13);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  // A constant input stays constant whatever the weights, as long as they are renormalised.
  expect_near((*out)[0], {3, 3, 3, 3, 3, 3});
}

TEST(Resize, TfCropAndResizeExtrapolates) {
  ir::Attributes at;
  at.set("mode", std::string("linear"));
  at.set("coordinate_transformation_mode", std::string("tf_crop_and_resize"));
  at.set("extrapolation_value", 10.0f);
  // roi [0.5, 1.5] of a length-3 input: coordinates 1, 2, 3 -> the last is outside.
  OneNode n("Resize",
            {f32({0, 1, 2}, {3}), f32({0.5f, 1.5f}, {2}), Tensor(), Tensor::from_vector(std::vector<int64_t>{3}, {1})},
            1, at, 13);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {1, 2, 10});
}

TEST(Resize, Opset10AndUpsampleUseScalesInputOrAttribute) {
  OneNode r10("Resize", {f32({1, 2, 3, 4, 5, 6, 7, 8}, {1, 1, 2, 4}), scales({1, 1, 0.6f, 0.6f})}, 1, {}, 10);
  auto out = r10.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {1, 3});  // shrinking nearest takes ceil (onnxruntime, ONNX opset-10 test)
  ir::Attributes at;
  at.set("scales", std::vector<float>{1, 2});
  OneNode up7("Upsample", {f32({1, 2}, {1, 2})}, 1, at, 7);
  out = up7.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {1, 1, 2, 2});
  ir::Attributes lin;
  lin.set("mode", std::string("linear"));
  OneNode up9("Upsample", {f32({1, 2}, {1, 2}), scales({1, 2})}, 1, lin, 9);
  out = up9.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {1, 1.5f, 2, 2});
}

TEST(Resize, IntegerNearestCopiesExactly) {
  OneNode n("Resize", {Tensor::from_vector(std::vector<uint8_t>{7, 250}, {2}), Tensor(), scales({2})}, 1, {}, 13);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  ASSERT_EQ((*out)[0].dtype(), DType::kU8);
  EXPECT_EQ((std::vector<uint8_t>((*out)[0].data<uint8_t>(), (*out)[0].data<uint8_t>() + 4)),
            (std::vector<uint8_t>{7, 7, 250, 250}));
}

TEST(Resize, RejectsHostileInputs) {
  auto fails = [](OneNode& n) { return !n.run().ok(); };
  OneNode negative("Resize", {f32({1, 2}, {2}), Tensor(), scales({-1})}, 1, {}, 13);
  EXPECT_TRUE(fails(negative));
  OneNode huge("Resize", {f32({1, 2}, {2}), Tensor(), scales({1e30f})}, 1, {}, 13);
  EXPECT_TRUE(fails(huge));
  OneNode wrong_rank("Resize", {f32({1, 2}, {2}), Tensor(), scales({1, 2})}, 1, {}, 13);
  EXPECT_TRUE(fails(wrong_rank));
  OneNode neither("Resize", {f32({1, 2}, {2})}, 1, {}, 13);
  EXPECT_TRUE(fails(neither));
  OneNode neg_size("Resize",
                   {f32({1, 2}, {2}), Tensor(), Tensor(), Tensor::from_vector(std::vector<int64_t>{-4}, {1})}, 1, {}, 13);
  EXPECT_TRUE(fails(neg_size));
  ir::Attributes bad_mode;
  bad_mode.set("mode", std::string("bicubic"));
  OneNode mode("Resize", {f32({1, 2}, {2}), Tensor(), scales({2})}, 1, bad_mode, 13);
  EXPECT_TRUE(fails(mode));
}

TEST(Resize, InferLeavesDimsUnknownWithoutScalesValue) {
  ir::Graph g;
  ir::Value* x = g.add_value("x", {DType::kF32, ir::Shape({ir::Dim(1), ir::Dim(3)})}).value();
  ir::Value* s = g.add_value("s", {DType::kF32, ir::Shape({ir::Dim(2)})}).value();
  ir::Value* y = g.add_value("y").value();
  ir::Node* n = g.add_node("Resize", "r", {x, nullptr, s}, {y});
  n->opset = 13;
  std::vector<ir::TensorType> types;
  ASSERT_TRUE(ir::infer_node(*n, {}, &types).ok());
  EXPECT_EQ(types[0].shape.to_string(), "[?,?]");
  Tensor sv = scales({2, 2});
  ASSERT_TRUE(ir::infer_node(*n, {nullptr, nullptr, &sv}, &types).ok());
  EXPECT_EQ(types[0].shape.to_string(), "[2,6]");
}

// ---------------------------------------------------------------- If

// then: Add(outer x, constant [1,2]) -> [2]; else: Concat(x, x) -> [4]: shapes differ.
struct IfGraph {
  std::unique_ptr<ir::Graph> owned = std::make_unique<ir::Graph>();  // Graph is not movable
  ir::Graph& g = *owned;
  ir::Node* node = nullptr;

  explicit IfGraph(ir::Dim x_dim = ir::Dim(2)) {
    g.opsets[""] = 13;
    ir::Value* cond = g.add_value("cond", {DType::kBool, ir::Shape(std::vector<ir::Dim>{})}).value();
    ir::Value* x = g.add_value("x", {DType::kF32, ir::Shape({x_dim})}).value();
    ir::Value* y = g.add_value("y").value();
    g.inputs() = {cond, x};
    g.outputs() = {y};
    auto then_g = std::make_shared<ir::Graph>();
    then_g->name = "then";
    {
      ir::Value* ox = then_g->add_value("x", x->type).value();
      ox->is_outer_ref = true;
      ir::Value* c = then_g->add_value("c", {DType::kF32, ir::Shape({ir::Dim(2)})}).value();
      c->constant = f32({1, 2}, {2});
      ir::Value* o = then_g->add_value("then_out").value();
      then_g->add_node("Add", "add", {ox, c}, {o})->opset = 13;
      then_g->outputs() = {o};
      then_g->relink();
    }
    auto else_g = std::make_shared<ir::Graph>();
    else_g->name = "else";
    {
      ir::Value* ox = else_g->add_value("x", x->type).value();
      ox->is_outer_ref = true;
      ir::Value* o = else_g->add_value("else_out").value();
      ir::Attributes at;
      at.set("axis", int64_t{0});
      else_g->add_node("Concat", "cat", {ox, ox}, {o}, at)->opset = 13;
      else_g->outputs() = {o};
      else_g->relink();
    }
    ir::Attributes at;
    at.set("then_branch", then_g);
    at.set("else_branch", else_g);
    node = g.add_node("If", "if", {cond}, {y}, at);
    node->opset = 13;
    node->implicit_inputs = {x};
    g.relink();
  }
};

TEST(If, InfersPerBranchAndMergesWhenConditionUnknown) {
  ASSERT_TRUE(ir::OpRegistry::global().find("Add") && ir::OpRegistry::global().find("Concat"));
  IfGraph ig;
  ASSERT_TRUE(ir::verify_node(*ig.node).ok());
  std::vector<ir::TensorType> types;
  ASSERT_TRUE(ir::infer_node(*ig.node, {}, &types).ok());
  EXPECT_EQ(types[0].to_string(), "f32[?]");
  Tensor t = Tensor::from_vector(std::vector<bool>{true}, {});
  Tensor f = Tensor::from_vector(std::vector<bool>{false}, {});
  ASSERT_TRUE(ir::infer_node(*ig.node, {&t}, &types).ok());
  EXPECT_EQ(types[0].to_string(), "f32[2]");
  ASSERT_TRUE(ir::infer_node(*ig.node, {&f}, &types).ok());
  EXPECT_EQ(types[0].to_string(), "f32[4]");
}

TEST(If, RunsChosenBranchWithOuterValues) {
  ASSERT_TRUE(backends::ref::KernelRegistry::global().find("Add") && backends::ref::KernelRegistry::global().find("Concat"));
  IfGraph ig;
  Tensor x = f32({10, 20}, {2});
  for (bool c : {true, false}) {
    auto out = backends::ref::interpret_graph(ig.g, {Tensor::from_vector(std::vector<bool>{c}, {}), x});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    if (c) expect_near((*out)[0], {11, 22});
    else expect_near((*out)[0], {10, 20, 10, 20});
  }
}

// The branch's output shape follows the run-time shape of the outer value, which the graph only
// knows as a symbol: the kernel sizes its outputs from what the branch produced.
TEST(If, SymbolicOuterValueOnEveryBackend) {
  for (const char* backend : {"ref", "cpu"}) {
    for (bool c : {true, false}) {
      for (const std::vector<float>& xs : {std::vector<float>{10}, std::vector<float>{10, 20}}) {
        IfGraph ig(ir::Dim::symbolic("n"));
        runtime::SessionOptions o;
        o.backend = backend;
        auto s = runtime::Session::create(std::move(ig.owned), o);
        ASSERT_TRUE(s.ok()) << s.status().to_string();
        const Tensor x = f32(xs, {static_cast<int64_t>(xs.size())});
        auto out = (*s)->run({{"cond", Tensor::from_vector(std::vector<bool>{c}, {})}, {"x", x}});
        ASSERT_TRUE(out.ok()) << backend << ": " << out.status().to_string();
        std::vector<float> want;
        if (c) {
          for (size_t i = 0; i < 2; ++i) want.push_back(xs[xs.size() == 1 ? 0 : i] + static_cast<float>(i + 1));
        } else {
          want = xs;
          want.insert(want.end(), xs.begin(), xs.end());
        }
        expect_near((*out)[0], want);
      }
    }
  }
}

TEST(If, RejectsMissingBranchOrOutputCountMismatch) {
  IfGraph ig;
  ig.node->attrs.erase("else_branch");
  EXPECT_FALSE(ir::verify_node(*ig.node).ok());
  IfGraph two;
  two.node->outputs.push_back(two.g.add_value("extra").value());
  EXPECT_FALSE(ir::verify_node(*two.node).ok());
}

}  // namespace
}  // namespace nfuse

namespace nfuse {
namespace {

// ---------------------------------------------------------------- Scan

// Body: state' = state + x_t; out_t = state'. Scan input read along axis 1 in reverse.
TEST(Scan, ReverseScanAlongAxisOneWithRunningSum) {
  ASSERT_TRUE(backends::ref::KernelRegistry::global().find("Add"));
  auto body = std::make_shared<ir::Graph>();
  body->name = "body";
  ir::TensorType vec{DType::kF32, ir::Shape({ir::Dim(2)})};
  ir::Value* s_in = body->add_value("s_in", vec).value();
  ir::Value* x_in = body->add_value("x_in", vec).value();
  ir::Value* s_out = body->add_value("s_out", vec).value();
  ir::Value* y_out = body->add_value("y_out", vec).value();
  body->add_node("Add", "add", {s_in, x_in}, {s_out})->opset = 13;
  body->add_node("Identity", "id", {s_out}, {y_out})->opset = 13;
  body->inputs() = {s_in, x_in};
  body->outputs() = {s_out, y_out};
  body->relink();
  ir::Attributes at;
  at.set("body", body);
  at.set("num_scan_inputs", int64_t{1});
  at.set("scan_input_axes", std::vector<int64_t>{1});
  at.set("scan_input_directions", std::vector<int64_t>{1});
  // x is [2, 3]: columns are the steps, taken last to first.
  OneNode n("Scan", {f32({0, 0}, {2}), f32({1, 2, 3, 10, 20, 30}, {2, 3})}, 2, at, 13);
  auto out = n.run();
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  expect_near((*out)[0], {6, 60});
  ASSERT_EQ((*out)[1].dims(), (std::vector<int64_t>{3, 2}));
  expect_near((*out)[1], {3, 30, 5, 50, 6, 60});
  at.set("scan_input_axes", std::vector<int64_t>{2});
  OneNode bad("Scan", {f32({0, 0}, {2}), f32({1, 2, 3, 10, 20, 30}, {2, 3})}, 2, at, 13);
  EXPECT_FALSE(bad.run().ok());
}

}  // namespace
}  // namespace nfuse
