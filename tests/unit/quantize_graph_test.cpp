// quantize_static on a tiny Conv-Relu-MaxPool-Conv-Relu-Flatten graph: the QDQ graph verifies,
// has one Q/DQ pair per activation (the MaxPool output sharing the Relu's parameters), s8
// per-channel weights, stays close to the float graph, and the cpu backend's passes turn both
// convolutions into QLinearConv. The report and the mixed-precision promotion run on it too.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <set>

#include "pass_test_util.h"
#include "quant/mixed_precision.h"
#include "quant/quant_report.h"
#include "quant/quantize_graph.h"

namespace nfuse::passes_test {
namespace {

std::unique_ptr<ir::Graph> conv_relu_conv() {
  OnnxBuilder b;
  b.input("x", kF, {-1, 3, 8, 8});
  random_initializer(b, "w1", {4, 3, 3, 3}, kSeed, -0.5f, 0.5f);
  random_initializer(b, "b1", {4}, kSeed + 1, -0.1f, 0.1f);
  random_initializer(b, "w2", {5, 4, 3, 3}, kSeed + 2, -0.5f, 0.5f);
  random_initializer(b, "b2", {5}, kSeed + 3, -0.1f, 0.1f);
  set_ints_attr(b.node("Conv", {"x", "w1", "b1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& mp = b.node("MaxPool", {"r1"}, {"p1"}, "pool1");
  set_ints_attr(mp, "kernel_shape", {2, 2});
  set_ints_attr(mp, "strides", {2, 2});
  set_ints_attr(b.node("Conv", {"p1", "w2", "b2"}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c2"}, {"r2"}, "relu2");
  b.node("Flatten", {"r2"}, {"y"}, "flatten");
  out(b, "y");
  return load(b);
}

std::vector<ir::Tensor> batches(uint32_t seed, int count) {
  std::vector<ir::Tensor> out;
  for (int i = 0; i < count; ++i) {
    ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, {4, 3, 8, 8});
    std::vector<float> v = random_values(t.numel(), seed + static_cast<uint32_t>(i), -2.0f, 2.0f);
    std::copy(v.begin(), v.end(), t.data<float>());
    out.push_back(t);
  }
  return out;
}

TEST(QuantizeGraph, ConvReluConvBecomesFusableQdq) {
  auto g = conv_relu_conv();
  ASSERT_TRUE(g);
  quant::QuantizeOptions options;
  auto q = quant::quantize_static(*g, batches(kSeed, 4), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  const ir::Graph& qg = *q->qdq;
  EXPECT_TRUE(qg.verify().ok());
  // x, r1, p1 (shares r1's params), r2: four activation pairs; two weight DequantizeLinears.
  EXPECT_EQ(count_ops(qg, "QuantizeLinear"), 4);
  EXPECT_EQ(count_ops(qg, "DequantizeLinear"), 6);
  EXPECT_EQ(q->weights_quantized, 2);
  // conv1 (absorbing relu1), pool1, conv2 (absorbing relu2).
  ASSERT_EQ(q->layers.size(), 3u);
  EXPECT_EQ(q->layers[0].output, "r1");
  EXPECT_EQ(q->layers[1].op, "MaxPool");
  EXPECT_EQ(q->layers[1].output, "p1");
  EXPECT_EQ(q->layers[2].output, "r2");
  bool shared = false;
  for (const auto& t : q->tensors) {
    EXPECT_EQ(t.params.storage, ir::DType::kU8) << t.name;
    if (t.name == "p1") {
      shared = true;
      EXPECT_EQ(t.shared_with, "r1");
    }
    if (t.name == "r1") {
      EXPECT_EQ(t.params.zero_point[0], 0);  // ReLU output: [0, max]
    }
  }
  EXPECT_TRUE(shared);
  // Weights: s8 constants, per-channel scales along axis 0, zero points 0.
  int weights = 0;
  for (const auto& n : qg.nodes()) {
    if (n->op_type != "DequantizeLinear" || !n->input(0)->constant) continue;
    ++weights;
    EXPECT_EQ(n->input(0)->constant->dtype(), ir::DType::kI8);
    EXPECT_EQ(n->attrs.get_int("axis", 1), 0);
    EXPECT_EQ(n->input(1)->constant->numel(), n->input(0)->constant->dim(0));
    const ir::Tensor& zp = *n->input(2)->constant;
    for (int64_t i = 0; i < zp.numel(); ++i) EXPECT_EQ(zp.get_int(i), 0);
    const ir::Tensor& s = *n->input(1)->constant;
    EXPECT_NE(s.get_double(0), s.get_double(1));  // per channel, not one scale repeated
  }
  EXPECT_EQ(weights, 2);

  // Close to the float graph on fresh data; the report sees both layers.
  auto report = quant::evaluate_quantization(*q, batches(kSeed + 100, 3));
  ASSERT_TRUE(report.ok()) << report.status().to_string();
  ASSERT_EQ(report->layers.size(), 3u);
  EXPECT_GT(report->output.cosine, 0.99);
  for (const auto& l : report->layers) EXPECT_GT(l.error.cosine, 0.99) << l.layer.name;
  EXPECT_TRUE(report->first_below_0_95.empty());
  quant::ReportInput ri;
  ri.model = "conv_relu_conv";
  ri.options = options;
  ri.result = &*q;
  ri.calibration = *report;
  ri.calibration_samples = 12;
  auto j = nlohmann::json::parse(quant::report_json(ri), nullptr, false);
  ASSERT_TRUE(j.is_object());
  EXPECT_EQ(j["method"], "minmax");
  EXPECT_EQ(j["act"], "u8");
  EXPECT_EQ(j["layers"].size(), 3u);
  EXPECT_EQ(j["layers"][0]["precision"], "int8");
  EXPECT_TRUE(j["first_below_0_95"].is_null());
  EXPECT_TRUE(j["output"].contains("snr_db"));
  EXPECT_TRUE(j["evaluation"].is_null());
  const std::string html = quant::report_html(ri);
  EXPECT_NE(html.find("conv1"), std::string::npos);
  EXPECT_NE(html.find("</html>"), std::string::npos);

  // The cpu backend's passes fuse both convolutions into QLinearConv.
  auto copy = quant::clone_graph(qg);
  ASSERT_TRUE(copy.ok()) << copy.status().to_string();
  runtime::SessionOptions so;
  so.backend = "cpu";
  auto session = runtime::Session::create(std::move(*copy), so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  EXPECT_EQ(count_ops((*session)->graph(), "QLinearConv"), 2);
  EXPECT_EQ(count_ops((*session)->graph(), "Conv"), 0);
}

TEST(QuantizeGraph, SymmetricS8AndOtherMethods) {
  auto g = conv_relu_conv();
  ASSERT_TRUE(g);
  for (auto method : {quant::Method::kPercentile, quant::Method::kMse, quant::Method::kSqnr}) {
    quant::QuantizeOptions options;
    options.method = method;
    options.act = quant::ActScheme::kS8Symmetric;
    options.conv_regions = false;  // by default each Conv absorbs its Relu as a float epilogue
    auto q = quant::quantize_static(*g, batches(kSeed, 4), options);
    ASSERT_TRUE(q.ok()) << q.status().to_string();
    for (const auto& t : q->tensors) {
      EXPECT_EQ(t.params.storage, ir::DType::kI8) << t.name;
      EXPECT_EQ(t.params.zero_point[0], 0) << t.name;
    }
    // s8: the Conv outputs are quantized (a symmetric range cannot imply the Relu), the Relus
    // are layers of their own sharing their input's parameters, as does the pooled output;
    // both convolutions still fuse.
    ASSERT_EQ(q->layers.size(), 5u);
    EXPECT_EQ(q->layers[0].output, "c1");
    EXPECT_EQ(q->layers[1].op, "Relu");
    EXPECT_EQ(q->layers[3].output, "c2");
    for (const auto& t : q->tensors) {
      if (t.name == "r1" || t.name == "p1") {
        EXPECT_EQ(t.shared_with, "c1") << t.name;
      }
    }
    auto copy = quant::clone_graph(*q->qdq);
    ASSERT_TRUE(copy.ok()) << copy.status().to_string();
    runtime::SessionOptions so;
    so.backend = "cpu";
    auto session = runtime::Session::create(std::move(*copy), so);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    EXPECT_EQ(count_ops((*session)->graph(), "QLinearConv"), 2) << quant::method_name(method);
    auto report = quant::evaluate_quantization(*q, batches(kSeed + 100, 2));
    ASSERT_TRUE(report.ok()) << report.status().to_string();
    EXPECT_GT(report->output.cosine, 0.98) << quant::method_name(method);
  }
}

// Sensitivity ranks layers by the output error each causes alone; promotion to float of every
// layer reproduces the float graph exactly, and to int16 brings the output much closer.
TEST(QuantizeGraph, SensitivityAndMixedPrecision) {
  auto g = conv_relu_conv();
  ASSERT_TRUE(g);
  quant::QuantizeOptions options;
  options.act = quant::ActScheme::kS8Symmetric;
  auto q = quant::quantize_static(*g, batches(kSeed, 4), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  const auto data = batches(kSeed + 200, 2);
  auto reference = quant::run_output0(*q->fp32, data, /*optimize=*/false);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  auto sens = quant::layer_sensitivity(*q, data, *reference, 1);
  ASSERT_TRUE(sens.ok()) << sens.status().to_string();
  ASSERT_EQ(sens->size(), q->layers.size());
  auto all = quant::evaluate_output(*q->qdq, data, *reference);
  ASSERT_TRUE(all.ok()) << all.status().to_string();
  for (const auto& s : *sens) {
    EXPECT_LT(s.output.cosine, 1.0) << s.node_output;  // every layer alone adds some error
    // ... less than all together, up to errors that partly cancel (c2 alone 0.999740 against all
    // 0.999743 since c1's range stops where its Relu turns constant: reader_domain.h)
    EXPECT_GE(s.output.cosine, all->cosine - 1e-5) << s.node_output;
  }
  // A target no int8 graph meets: every layer ends up promoted to float, which is the float graph.
  auto work = quant::layer_work(*q, {4, 3, 8, 8});
  ASSERT_TRUE(work.ok()) << work.status().to_string();
  auto to_float = quant::promote_until(*q, *sens, *work, data, *reference, 1.0, quant::PromoteTo::kFloat, 1);
  ASSERT_TRUE(to_float.ok()) << to_float.status().to_string();
  EXPECT_EQ(to_float->promotions.size(), q->layers.size());
  EXPECT_EQ(to_float->after.max_abs_error, 0.0);
  EXPECT_TRUE(to_float->target_met);
  EXPECT_EQ(q->weights_quantized, 0);
  // Promotions follow the loss each layer's int8 quantization causes on the worst sample per unit
  // of its compute.
  double best = -1.0;
  std::string first;
  for (const auto& s : *sens) {
    const int64_t macs = work->macs.at(s.node_output);
    const double units = static_cast<double>(macs > 0 ? macs : work->elements.at(s.node_output));
    if ((1.0 - s.worst) / units > best) {
      best = (1.0 - s.worst) / units;
      first = s.node_output;
    }
  }
  EXPECT_EQ(to_float->promotions[0].node_output, first);
}

// MACs at one sample: conv1 4x8x8 outputs x 3x3x3 taps, conv2 5x4x4 x 4x3x3; MaxPool has none
// (the 4x8x8 + 4x4x4 elements it converts when promoted stand in as its cost). The shares follow
// the selection.
TEST(QuantizeGraph, LayerWorkAndMacShares) {
  auto g = conv_relu_conv();
  ASSERT_TRUE(g);
  auto q = quant::quantize_static(*g, batches(kSeed, 2), quant::QuantizeOptions{});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  auto work = quant::layer_work(*q, {4, 3, 8, 8});  // batch 4 in the data; counted per sample
  ASSERT_TRUE(work.ok()) << work.status().to_string();
  ASSERT_EQ(q->layers.size(), 3u);
  EXPECT_EQ(work->macs.at(q->layers[0].node_output), 4 * 8 * 8 * 27);
  EXPECT_EQ(work->macs.at(q->layers[1].node_output), 0);
  EXPECT_EQ(work->elements.at(q->layers[1].node_output), 4 * 8 * 8 + 4 * 4 * 4);  // the pool's input and output
  EXPECT_EQ(work->macs.at(q->layers[2].node_output), 5 * 4 * 4 * 36);
  EXPECT_EQ(work->unplanned_macs, 0);
  quant::MacShares m = quant::mac_shares(*q, *work);
  EXPECT_EQ(m.int8, 6912 + 2880);
  EXPECT_EQ(m.int16 + m.float32, 0);
  quant::QdqSelection s = q->selection;
  s.int16_layers.insert(q->layers[0].node_output);
  s.float_layers.insert(q->layers[2].node_output);
  ASSERT_TRUE(q->rebuild(s).ok());
  m = quant::mac_shares(*q, *work);
  EXPECT_EQ(m.int8, 0);
  EXPECT_EQ(m.int16, 6912);
  EXPECT_EQ(m.float32, 2880);
}

// The integer-first ladder (--promote auto): a layer int16 fixes goes to int16 and no further; a
// layer int16 does not help (its 8-bit weights limit it) goes straight to float; `--promote
// int16` leaves the latter alone, and a layer whose quantization costs nothing is never promoted.
// The sensitivities are set by hand so each case is exact; the graph is real.
// What the promotion tests share: conv_relu_conv quantized to int8, one sample with its float
// output, and the layers' MACs.
struct PromotionSetup {
  std::optional<quant::QuantizeResult> q;
  std::vector<ir::Tensor> data, reference;
  quant::LayerWork work;
  std::string conv1, pool, conv2;
};

void promotion_setup(PromotionSetup* s, std::unique_ptr<ir::Graph> (*graph)() = conv_relu_conv) {
  auto g = graph();
  ASSERT_TRUE(g);
  auto q = quant::quantize_static(*g, batches(kSeed, 2), quant::QuantizeOptions{});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  s->q = std::move(*q);
  s->data = batches(kSeed + 200, 1);
  auto reference = quant::run_output0(*s->q->fp32, s->data, /*optimize=*/false);
  ASSERT_TRUE(reference.ok()) << reference.status().to_string();
  s->reference = std::move(*reference);
  auto work = quant::layer_work(*s->q, {1, 3, 8, 8});
  ASSERT_TRUE(work.ok()) << work.status().to_string();
  s->work = std::move(*work);
  ASSERT_GE(s->q->layers.size(), 2u);
  s->conv1 = s->q->layers.front().node_output;
  s->pool = s->q->layers.size() == 3 ? s->q->layers[1].node_output : "";
  s->conv2 = s->q->layers.back().node_output;
}

// Conv -> Relu -> Conv -> Relu whose first conv has one output channel 100x the others: its u8
// range leaves the other channels a few steps, which the second conv reads with full weight (and
// the loud channel with almost none), so 8 bits between them cost much and 16 bits recover it.
std::unique_ptr<ir::Graph> loud_channel_conv() {
  OnnxBuilder b;
  b.input("x", kF, {-1, 3, 8, 8});
  std::vector<float> w1 = random_values(4 * 27, kSeed, -0.5f, 0.5f);
  for (int i = 0; i < 27; ++i) w1[static_cast<size_t>(i)] *= 100.0f;
  std::vector<float> w2 = random_values(5 * 36, kSeed + 2, -0.5f, 0.5f);
  for (int o = 0; o < 5; ++o)
    for (int i = 0; i < 9; ++i) w2[static_cast<size_t>(o * 36 + i)] *= 1e-3f;
  b.initializer("w1", {4, 3, 3, 3}, w1);
  b.initializer("w2", {5, 4, 3, 3}, w2);
  set_ints_attr(b.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  set_ints_attr(b.node("Conv", {"r1", "w2"}, {"c2"}, "conv2"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c2"}, {"y"}, "relu2");
  out(b, "y");
  return load(b);
}

// A layer's sensitivity set by hand: (name, alone at int8, at int16); the worst sample is the mean.
quant::LayerSensitivity alone(const std::string& name, double c8, double c16) {
  quant::LayerSensitivity l;
  l.node_output = name;
  l.output.cosine = c8;
  l.int16 = quant::ErrorSummary{};
  l.int16->cosine = c16;
  l.worst = c8;
  l.int16_worst = c16;
  return l;
}

TEST(QuantizeGraph, IntegerFirstPromotion) {
  PromotionSetup setup;
  ASSERT_NO_FATAL_FAILURE(promotion_setup(&setup));
  auto& q = setup.q;
  const auto& data = setup.data;
  const auto* reference = &setup.reference;
  const auto* work = &setup.work;
  const std::string &conv1 = setup.conv1, &pool = setup.pool, &conv2 = setup.conv2;
  const std::vector<quant::LayerSensitivity> sens = {
      alone(conv1, 0.90, 1.0),   // activations limit it: int16 takes it all back
      alone(pool, 1.0, 1.0),     // costs nothing
      alone(conv2, 0.95, 0.95),  // int16 does not help
  };
  const quant::QdqSelection base = q->selection;
  struct Case {
    quant::PromoteTo to;
    std::set<std::string> int16, to_float;
  };
  for (const Case& c : {Case{quant::PromoteTo::kAuto, {conv1}, {conv2}}, Case{quant::PromoteTo::kInt16, {conv1}, {}},
                        Case{quant::PromoteTo::kFloat, {}, {conv1, conv2}}}) {
    ASSERT_TRUE(q->rebuild(base).ok());
    auto r = quant::promote_until(*q, sens, *work, data, *reference, 1.0, c.to, 1);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    EXPECT_EQ(q->selection.int16_layers, c.int16) << quant::promote_to_name(c.to);
    EXPECT_EQ(q->selection.float_layers, c.to_float) << quant::promote_to_name(c.to);
    EXPECT_EQ(r->promotions.size(), c.int16.size() + c.to_float.size()) << quant::promote_to_name(c.to);
    for (const auto& p : r->promotions) {
      EXPECT_EQ(p.to, c.int16.count(p.node_output) ? quant::PromoteTo::kInt16 : quant::PromoteTo::kFloat) << p.name;
      EXPECT_EQ(p.macs, work->macs.at(p.node_output)) << p.name;
    }
  }
  // The order is loss per unit of compute: conv2 removes 0.05 of loss per float step (cost 3 per
  // MAC), conv1 0.10 per int16 step (cost 1 per MAC); with conv2's MACs cut a thousandfold it
  // comes first, with conv1's it does.
  for (const bool conv2_first : {true, false}) {
    quant::LayerWork w = *work;
    w.macs[conv2_first ? conv2 : conv1] /= 1000;
    ASSERT_TRUE(q->rebuild(base).ok());
    auto r = quant::promote_until(*q, sens, w, data, *reference, 1.0, quant::PromoteTo::kAuto, 1);
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    ASSERT_EQ(r->promotions.size(), 2u);
    EXPECT_EQ(r->promotions[0].node_output, conv2_first ? conv2 : conv1);
  }
  // Measured: int16 alone never costs more than int8 alone on this graph's layers.
  auto measured = quant::layer_sensitivity(*q, data, *reference, 1, /*with_int16=*/true);
  ASSERT_TRUE(measured.ok()) << measured.status().to_string();
  for (const auto& s : *measured) {
    ASSERT_TRUE(s.int16.has_value()) << s.node_output;
    EXPECT_GE(s.int16->cosine, s.output.cosine - 1e-6) << s.node_output;
  }
}

// A tensor keeps its writer's precision, so an int16 step widens the layers writing its layer's
// input too (through the MaxPool that shares conv1's parameters, back to conv1): conv2 then reads
// 16 bits, as its "int16 alone" score measured, not an 8-bit tensor requantized; the writers are
// listed as promoted for conv2, the step's cost counts their MACs, and both convolutions run on
// the W8A16 kernel with nothing requantized to 8 bits on the way.
TEST(QuantizeGraph, Int16StepWidensTheInputsWriters) {
  PromotionSetup setup;
  ASSERT_NO_FATAL_FAILURE(promotion_setup(&setup));
  quant::QuantizeResult& q = *setup.q;
  const quant::LayerWork& work = setup.work;
  const std::vector<quant::LayerSensitivity> sens = {alone(setup.conv1, 1.0, 1.0), alone(setup.pool, 1.0, 1.0),
                                                     alone(setup.conv2, 0.90, 1.0)};
  auto r = quant::promote_until(q, sens, work, setup.data, setup.reference, 1.0, quant::PromoteTo::kAuto, 1);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(q.selection.int16_layers, (std::set<std::string>{setup.conv1, setup.pool, setup.conv2}));
  EXPECT_TRUE(q.selection.float_layers.empty());
  ASSERT_EQ(r->promotions.size(), 3u);
  EXPECT_EQ(r->promotions[0].node_output, setup.conv2);
  EXPECT_TRUE(r->promotions[0].writes_input_of.empty());
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_TRUE(r->promotions[i].node_output == setup.conv1 || r->promotions[i].node_output == setup.pool);
    EXPECT_EQ(r->promotions[i].to, quant::PromoteTo::kInt16);
    EXPECT_EQ(r->promotions[i].writes_input_of, q.layers[2].name);
  }
  // Every tensor conv2 reads through is 16-bit: no 8-bit Q/DQ pair is left in the graph, and both
  // convolutions run on QLinearConv16.
  for (const auto& up : q.qdq->nodes()) {
    if (up->op_type != "QuantizeLinear") continue;
    EXPECT_NE(up->domain, "") << "an 8-bit QuantizeLinear is left: " << up->label();
  }
  auto shares = quant::executed_mac_shares(*q.qdq, {1, 3, 8, 8});
  ASSERT_TRUE(shares.ok()) << shares.status().to_string();
  EXPECT_EQ(shares->int16, work.macs.at(setup.conv1) + work.macs.at(setup.conv2));
  EXPECT_EQ(shares->int8, 0);
}

// The scores alone rank a step first that helps little in the graph (conv1 in float): the target
// is met only once the step that matters joins it (conv2 at int16, conv1 widened with it as its
// input's writer), and the demotion pass then drops conv1's float step (by its score int16 would
// not help it) because the target still holds: conv1 stays at int16 only as conv2's writer.
TEST(QuantizeGraph, PromotionsThatAreNotNeededAreTakenBack) {
  PromotionSetup setup;
  ASSERT_NO_FATAL_FAILURE(promotion_setup(&setup, loud_channel_conv));
  quant::QuantizeResult& q = *setup.q;
  const quant::QdqSelection base = q.selection;
  auto worst_with = [&](const std::set<std::string>& int16, const std::set<std::string>& to_float) {
    quant::QdqSelection s = base;
    s.int16_layers = int16;
    s.float_layers = to_float;
    EXPECT_TRUE(q.rebuild(s).ok());
    double worst = 1.0;
    EXPECT_TRUE(quant::evaluate_output(*q.qdq, setup.data, setup.reference, 1, &worst).ok());
    return worst;
  };
  const double conv1_float = worst_with({}, {setup.conv1});
  const double conv2_int16 = worst_with({setup.conv2}, {});
  const double both = worst_with({setup.conv2}, {setup.conv1});
  const double target = std::min(conv2_int16, both);
  ASSERT_LT(worst_with({}, {}), target) << "int8 must miss the target";
  ASSERT_LT(conv1_float, target) << "conv1 in float alone must miss the target conv2 at int16 meets";
  const std::vector<quant::LayerSensitivity> sens = {alone(setup.conv1, 0.5, 0.5), alone(setup.conv2, 0.999, 1.0)};
  ASSERT_TRUE(q.rebuild(base).ok());
  auto r = quant::promote_until(q, sens, setup.work, setup.data, setup.reference, target, quant::PromoteTo::kAuto, 1);
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_TRUE(r->target_met);
  EXPECT_GE(r->worst_after, target);
  EXPECT_EQ(r->demotions, 1);
  // conv1 stays at int16 only as the writer of conv2's input.
  EXPECT_EQ(q.selection.int16_layers, (std::set<std::string>{setup.conv1, setup.conv2}));
  EXPECT_TRUE(q.selection.float_layers.empty());
  ASSERT_EQ(r->promotions.size(), 2u);
  EXPECT_EQ(r->promotions[0].node_output, setup.conv2);
  EXPECT_EQ(r->promotions[0].to, quant::PromoteTo::kInt16);
  EXPECT_TRUE(r->promotions[0].writes_input_of.empty());
  EXPECT_EQ(r->promotions[1].node_output, setup.conv1);
  EXPECT_EQ(r->promotions[1].to, quant::PromoteTo::kInt16);
  EXPECT_EQ(r->promotions[1].writes_input_of, q.layers.back().name);
}

// --precision int16: every activation becomes s16 ("com.microsoft" Q/DQ below opset 21), each Relu
// is absorbed by its Conv (the symmetric range does not imply it: the fused op clamps at 0, its
// y_min), and the cpu backend runs both convolutions on the W8A16 kernels with no Relu or lookup
// left between them; the output is at least as close to float as int8's.
TEST(QuantizeGraph, Int16RunsOnW8A16Kernels) {
  auto g = conv_relu_conv();
  ASSERT_TRUE(g);
  quant::QuantizeOptions options;
  options.precision = quant::Precision::kInt16;
  auto q = quant::quantize_static(*g, batches(kSeed, 4), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  for (const auto& t : q->tensors) {
    EXPECT_EQ(t.params.storage, ir::DType::kI16) << t.name;
    EXPECT_EQ(t.params.zero_point[0], 0) << t.name;
  }
  EXPECT_EQ(q->layers[0].output, "r1");
  auto copy = quant::clone_graph(*q->qdq);
  ASSERT_TRUE(copy.ok()) << copy.status().to_string();
  runtime::SessionOptions so;
  so.backend = "cpu";
  auto session = runtime::Session::create(std::move(*copy), so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  const ir::Graph& fused = (*session)->graph();
  EXPECT_EQ(count_ops(fused, "QLinearConv16"), 2);
  EXPECT_EQ(count_ops(fused, "Conv"), 0);
  EXPECT_EQ(count_ops(fused, "Relu"), 0);
  EXPECT_EQ(count_ops(fused, "QLinearLookup"), 0);
  int clamped = 0;
  for (const auto& n : fused.nodes())
    clamped += n->op_type == "QLinearConv16" && n->attrs.get_int("y_min", -32768) == 0;
  EXPECT_EQ(clamped, 2);  // both convs absorb their Relu
  const auto data = batches(kSeed + 300, 2);
  auto reference = quant::run_output0(*q->fp32, data, /*optimize=*/false);
  ASSERT_TRUE(reference.ok());
  auto e16 = quant::evaluate_output(*q->qdq, data, *reference);
  options.precision = quant::Precision::kInt8;
  auto q8 = quant::quantize_static(*g, batches(kSeed, 4), options);
  ASSERT_TRUE(q8.ok());
  auto e8 = quant::evaluate_output(*q8->qdq, data, *reference);
  ASSERT_TRUE(e16.ok() && e8.ok());
  EXPECT_GT(e16->snr_db, e8->snr_db);
}

// Mixed precision: every layer reads and writes its own precision, a tensor crossing from an
// int16 layer to an int8 one (or back) being requantized on that edge, so the cpu backend runs
// every convolution on an integer kernel (none in float between a 16-bit DequantizeLinear and an
// 8-bit QuantizeLinear), and the output stays between the all-int8 and all-int16 errors.
TEST(QuantizeGraph, MixedBoundariesRunOnIntegerKernels) {
  auto g = conv_relu_conv();
  ASSERT_TRUE(g);
  auto q = quant::quantize_static(*g, batches(kSeed, 4), quant::QuantizeOptions{});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  ASSERT_EQ(q->layers.size(), 3u);
  const auto data = batches(kSeed + 400, 2);
  auto reference = quant::run_output0(*q->fp32, data, /*optimize=*/false);
  ASSERT_TRUE(reference.ok());
  auto e8 = quant::evaluate_output(*q->qdq, data, *reference);
  ASSERT_TRUE(e8.ok());
  const quant::QdqSelection base = q->selection;
  for (size_t wide : {size_t{0}, size_t{2}}) {
    quant::QdqSelection s = base;
    s.int16_layers.insert(q->layers[wide].node_output);
    ASSERT_TRUE(q->rebuild(s).ok());
    // One requantized edge: pool1 reading conv1's s16 output, or conv2 reading pool1's u8 one.
    int requantized = 0;
    for (const auto& n : q->qdq->nodes()) {
      if (n->op_type == "QuantizeLinear" && n->input(0)->producer &&
          n->input(0)->producer->op_type == "DequantizeLinear")
        ++requantized;
    }
    EXPECT_EQ(requantized, 1) << wide;
    auto copy = quant::clone_graph(*q->qdq);
    ASSERT_TRUE(copy.ok()) << copy.status().to_string();
    runtime::SessionOptions so;
    so.backend = "cpu";
    auto session = runtime::Session::create(std::move(*copy), so);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    EXPECT_EQ(count_ops((*session)->graph(), "QLinearConv16"), 1) << wide;
    EXPECT_EQ(count_ops((*session)->graph(), "QLinearConv"), 1) << wide;
    EXPECT_EQ(count_ops((*session)->graph(), "Conv"), 0) << wide;
    auto e = quant::evaluate_output(*q->qdq, data, *reference);
    ASSERT_TRUE(e.ok());
    EXPECT_GE(e->snr_db, e8->snr_db - 0.5) << wide;
    // What ran is what the selection says: the executed MAC shares equal the planned ones.
    auto work = quant::layer_work(*q, {1, 3, 8, 8});
    auto ran = quant::executed_mac_shares(*q->qdq, {1, 3, 8, 8});
    ASSERT_TRUE(work.ok() && ran.ok()) << ran.status().to_string();
    const quant::MacShares planned = quant::mac_shares(*q, *work);
    EXPECT_EQ(ran->int8, planned.int8) << wide;
    EXPECT_EQ(ran->int16, planned.int16) << wide;
    EXPECT_EQ(ran->float32, planned.float32) << wide;
    EXPECT_GT(ran->int16, 0) << wide;
  }
  // A float layer runs in float.
  quant::QdqSelection s = base;
  s.float_layers.insert(q->layers[2].node_output);
  ASSERT_TRUE(q->rebuild(s).ok());
  auto ran = quant::executed_mac_shares(*q->qdq, {4, 3, 8, 8});
  ASSERT_TRUE(ran.ok()) << ran.status().to_string();
  EXPECT_EQ(ran->int8, 4 * 8 * 8 * 27);
  EXPECT_EQ(ran->float32, 5 * 4 * 4 * 36);
}

// An element-wise region (a lookup layer) after an int16 conv reads the conv's s16 output through
// its own requantization, and the cpu graph runs it in integers: the Sigmoid a lookup, the
// requantization a QLinearRegion, conv1 QLinearConv16.
TEST(QuantizeGraph, MixedBoundaryIntoALookupRegion) {
  OnnxBuilder b;
  b.input("x", kF, {-1, 3, 8, 8});
  random_initializer(b, "w1", {4, 3, 3, 3}, kSeed, -0.5f, 0.5f);
  random_initializer(b, "w2", {5, 4, 1, 1}, kSeed + 2, -0.5f, 0.5f);
  set_ints_attr(b.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Sigmoid", {"c1"}, {"s1"}, "sigmoid");
  b.node("Conv", {"s1", "w2"}, {"y"}, "conv2");
  out(b, "y");
  auto g = load(b);
  ASSERT_TRUE(g);
  quant::QuantizeOptions options;
  options.conv_regions = false;  // the Sigmoid a layer of its own (ConvAbsorbsItsRegion: the default)
  auto q = quant::quantize_static(*g, batches(kSeed, 4), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  quant::QdqSelection s = q->selection;
  std::string lookup;
  for (const auto& l : q->layers) {
    if (l.kind == quant::LayerKind::kLookup) lookup = l.node_output;
    if (l.name == "conv1") s.int16_layers.insert(l.node_output);
  }
  ASSERT_FALSE(lookup.empty());
  ASSERT_TRUE(q->rebuild(s).ok());
  auto copy = quant::clone_graph(*q->qdq);
  ASSERT_TRUE(copy.ok()) << copy.status().to_string();
  runtime::SessionOptions so;
  so.backend = "cpu";
  auto session = runtime::Session::create(std::move(*copy), so);
  ASSERT_TRUE(session.ok()) << session.status().to_string();
  const ir::Graph& run = (*session)->graph();
  EXPECT_EQ(count_ops(run, "QLinearConv16"), 1);
  EXPECT_EQ(count_ops(run, "QLinearLookup"), 1);
  EXPECT_EQ(count_ops(run, "QLinearRegion"), 1);
  EXPECT_EQ(count_ops(run, "Sigmoid"), 0);
  // What stays float: the graph input's QuantizeLinear, and conv2, whose output is the graph's
  // (float) output, on its DequantizeLinear'd input.
  EXPECT_EQ(count_ops(run, "QuantizeLinear"), 1);
  EXPECT_EQ(count_ops(run, "DequantizeLinear"), 1);
  EXPECT_EQ(count_ops(run, "Conv"), 1);
  const auto data = batches(kSeed + 500, 2);
  auto reference = quant::run_output0(*q->fp32, data, /*optimize=*/false);
  ASSERT_TRUE(reference.ok());
  auto e = quant::evaluate_output(*q->qdq, data, *reference);
  ASSERT_TRUE(e.ok());
  EXPECT_GT(e->cosine, 0.99);
}

// A Conv whose output only its activation region reads (HardSwish written out, as PaddleOCR
// exports it) absorbs the region: its output gets no Q/DQ, the region's does, and the cpu graph
// runs the pair as one nfuse.QLinearConvRegion with no lookup left. Promoted to int16, the same
// layer is a 16-bit conv and a 16-bit region again; `conv_regions` false gives the lookup.
TEST(QuantizeGraph, ConvAbsorbsItsRegion) {
  OnnxBuilder b;
  b.input("x", kF, {-1, 3, 8, 8});
  random_initializer(b, "w1", {4, 3, 3, 3}, kSeed, -0.5f, 0.5f);
  random_initializer(b, "w2", {5, 4, 1, 1}, kSeed + 2, -0.5f, 0.5f);
  b.initializer("three", {}, {3.0f});
  b.initializer("zero", {}, {0.0f});
  b.initializer("six", {}, {6.0f});
  set_ints_attr(b.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Add", {"c1", "three"}, {"a1"}, "add3");
  b.node("Clip", {"a1", "zero", "six"}, {"k1"}, "clip");
  b.node("Mul", {"c1", "k1"}, {"m1"}, "mul");
  b.node("Div", {"m1", "six"}, {"h1"}, "div6");
  b.node("Conv", {"h1", "w2"}, {"c2"}, "conv2");
  b.node("Relu", {"c2"}, {"r2"}, "relu2");
  b.node("GlobalAveragePool", {"r2"}, {"y"}, "pool");
  out(b, "y");
  auto g = load(b);
  ASSERT_TRUE(g);
  quant::QuantizeOptions options;
  options.equalize_activations = false;
  auto q = quant::quantize_static(*g, batches(kSeed, 4), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  const quant::PlannedLayer* conv1 = nullptr;
  for (const auto& l : q->layers) {
    EXPECT_NE(l.kind, quant::LayerKind::kLookup) << l.name;
    if (l.name == "conv1") conv1 = &l;
  }
  ASSERT_NE(conv1, nullptr);
  EXPECT_EQ(conv1->fused_root, "c1");
  EXPECT_EQ(conv1->output, "h1");
  EXPECT_EQ(conv1->region.size(), 4u);
  for (const auto& t : q->tensors) EXPECT_NE(t.name, "c1");  // no Q/DQ on the accumulator's tensor
  const auto data = batches(kSeed + 500, 2);
  auto reference = quant::run_output0(*q->fp32, data, /*optimize=*/false);
  ASSERT_TRUE(reference.ok());
  auto ran_ops = [&](const char* op) {
    auto copy = quant::clone_graph(*q->qdq);
    EXPECT_TRUE(copy.ok());
    runtime::SessionOptions so;
    so.backend = "cpu";
    auto session = runtime::Session::create(std::move(*copy), so);
    EXPECT_TRUE(session.ok()) << session.status().to_string();
    return session.ok() ? count_ops((*session)->graph(), op) : -1;
  };
  EXPECT_EQ(ran_ops("QLinearConvRegion"), 1);
  EXPECT_EQ(ran_ops("QLinearLookup"), 0);
  EXPECT_EQ(ran_ops("Conv"), 0);
  auto e = quant::evaluate_output(*q->qdq, data, *reference);
  ASSERT_TRUE(e.ok());
  EXPECT_GT(e->cosine, 0.995);
  // conv1 at int16: c1 gets its 16-bit Q/DQ back, and the pair runs as QLinearConv16 and a
  // 16-bit region.
  quant::QdqSelection s = q->selection;
  s.int16_layers.insert(conv1->node_output);
  ASSERT_TRUE(q->rebuild(s).ok());
  bool c1_quantized = false;
  for (const auto& t : q->tensors)
    c1_quantized = c1_quantized || (t.name == "c1" && t.params.storage == ir::DType::kI16);
  EXPECT_TRUE(c1_quantized);
  EXPECT_EQ(ran_ops("QLinearConv16"), 1);
  EXPECT_EQ(ran_ops("QLinearConvRegion"), 0);
  EXPECT_EQ(ran_ops("Conv"), 0);
  e = quant::evaluate_output(*q->qdq, data, *reference);
  ASSERT_TRUE(e.ok());
  EXPECT_GT(e->cosine, 0.995);
  // The lookup instead.
  options.conv_regions = false;
  q = quant::quantize_static(*g, batches(kSeed, 4), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  int lookups = 0;
  for (const auto& l : q->layers) lookups += l.kind == quant::LayerKind::kLookup ? 1 : 0;
  EXPECT_EQ(lookups, 1);
  EXPECT_EQ(ran_ops("QLinearConvRegion"), 0);
  EXPECT_EQ(ran_ops("QLinearLookup"), 1);
  // A region with an op nfuse.QLinearConvRegion does not run (Softplus) is not absorbed: the fusion
  // would leave it, and the Conv, in float. It stays a lookup after an int8 Conv.
  OnnxBuilder soft;
  soft.input("x", kF, {-1, 3, 8, 8});
  random_initializer(soft, "w1", {4, 3, 3, 3}, kSeed, -0.5f, 0.5f);
  random_initializer(soft, "w2", {5, 4, 1, 1}, kSeed + 2, -0.5f, 0.5f);
  set_ints_attr(soft.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  soft.node("Softplus", {"c1"}, {"s1"}, "softplus");
  soft.node("Conv", {"s1", "w2"}, {"c2"}, "conv2");
  soft.node("Relu", {"c2"}, {"r2"}, "relu2");
  soft.node("GlobalAveragePool", {"r2"}, {"y"}, "pool");
  out(soft, "y");
  auto sg = load(soft);
  ASSERT_TRUE(sg);
  options.conv_regions = true;
  q = quant::quantize_static(*sg, batches(kSeed, 4), options);
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  for (const auto& l : q->layers) EXPECT_TRUE(l.fused_root.empty()) << l.name;
  EXPECT_EQ(ran_ops("QLinearConv"), 2);
  EXPECT_EQ(ran_ops("QLinearLookup"), 1);
  EXPECT_EQ(ran_ops("Conv"), 0);
  // A region writing a graph output stays float, so its Conv keeps its own quantized output (an
  // absorbing Conv would have none and run in float).
  OnnxBuilder head;
  head.input("x", kF, {-1, 3, 8, 8});
  random_initializer(head, "w1", {4, 3, 3, 3}, kSeed, -0.5f, 0.5f);
  set_ints_attr(head.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  head.node("Sigmoid", {"c1"}, {"y"}, "sigmoid");
  out(head, "y");
  auto hg = load(head);
  ASSERT_TRUE(hg);
  auto plan = quant::plan_quantization(*hg, quant::ActScheme::kU8Asymmetric);
  ASSERT_TRUE(plan.ok()) << plan.status().to_string();
  ASSERT_FALSE(plan->layers.empty());
  EXPECT_TRUE(plan->layers[0].fused_root.empty());
  EXPECT_EQ(plan->layers[0].output, "c1");
  EXPECT_TRUE(plan->layers[0].output_quantized);
}

// A segmentation-style upsampling head: Conv -> Relu -> ConvTranspose 2x2 stride 2 -> Relu ->
// ConvTranspose 2x2 stride 2 (one channel) -> Sigmoid (the graph output). Both ConvTransposes are
// weighted layers (per output channel, the weight's axis 1) and run as pointwise QLinearConvs
// with DepthToSpace on the cpu backend: every MAC in int8, the output near float.
TEST(QuantizeGraph, ConvTransposeHeadRunsInt8) {
  OnnxBuilder b;
  b.input("x", kF, {-1, 3, 8, 8});
  random_initializer(b, "w1", {6, 3, 3, 3}, kSeed, -0.5f, 0.5f);
  random_initializer(b, "wt1", {6, 4, 2, 2}, kSeed + 1, -0.5f, 0.5f);
  random_initializer(b, "bt1", {4}, kSeed + 2, -0.2f, 0.2f);
  random_initializer(b, "wt2", {4, 1, 2, 2}, kSeed + 3, -0.5f, 0.5f);
  set_ints_attr(b.node("Conv", {"x", "w1"}, {"c1"}, "conv1"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  auto& t1 = b.node("ConvTranspose", {"r1", "wt1", "bt1"}, {"u1"}, "up1");
  set_ints_attr(t1, "kernel_shape", {2, 2});
  set_ints_attr(t1, "strides", {2, 2});
  b.node("Relu", {"u1"}, {"r2"}, "relu2");
  auto& t2 = b.node("ConvTranspose", {"r2", "wt2"}, {"u2"}, "up2");
  set_ints_attr(t2, "kernel_shape", {2, 2});
  set_ints_attr(t2, "strides", {2, 2});
  b.node("Sigmoid", {"u2"}, {"y"}, "sigmoid");
  out(b, "y");
  auto g = load(b);
  ASSERT_TRUE(g);
  auto q = quant::quantize_static(*g, batches(kSeed, 4), {});
  ASSERT_TRUE(q.ok()) << q.status().to_string();
  int weighted = 0;
  for (const auto& l : q->layers) {
    if (l.op == "ConvTranspose") {
      EXPECT_EQ(l.kind, quant::LayerKind::kWeighted) << l.name;
      EXPECT_EQ(l.weight_axis, 1) << l.name;
      ++weighted;
    }
  }
  EXPECT_EQ(weighted, 2);
  auto shares = quant::executed_mac_shares(*q->qdq, {1, 3, 8, 8});
  ASSERT_TRUE(shares.ok()) << shares.status().to_string();
  EXPECT_EQ(shares->float32, 0);
  EXPECT_GT(shares->int8, 0);
  EXPECT_EQ(shares->ran.at("up1"), "int8");
  EXPECT_EQ(shares->ran.at("up2"), "int8");
  const auto data = batches(kSeed + 500, 2);
  auto reference = quant::run_output0(*q->fp32, data, /*optimize=*/false);
  ASSERT_TRUE(reference.ok());
  auto e = quant::evaluate_output(*q->qdq, data, *reference);
  ASSERT_TRUE(e.ok());
  EXPECT_GT(e->cosine, 0.995);
}

TEST(QuantizeGraph, RejectsEmptyCalibration) {
  auto g = conv_relu_conv();
  ASSERT_TRUE(g);
  auto q = quant::quantize_static(*g, {}, {});
  EXPECT_FALSE(q.ok());
}

}  // namespace
}  // namespace nfuse::passes_test
