// The partitioner's passes on a small CNN with a fake accelerator backend: pins, denials,
// preference order, ping-pong removal, refusal of partitions that do not pay, full-offload
// errors, determinism and the report's JSON.
#include <nlohmann/json.hpp>

#include "backends/backend.h"
#include "partition/partition_report.h"
#include "partition_test_util.h"

namespace nfuse::partition_test {
namespace {

// Accepts only what a fixed-function accelerator would: 4-D f32 static-shape Conv, Relu, Add,
// MaxPool; says why not in the partitioner's categories. Runs them on the cpu backend.
class FakeNpu final : public backends::Backend {
 public:
  explicit FakeNpu(bool keeps_on_chip) : keeps_on_chip_(keeps_on_chip) {}
  std::string_view name() const override { return keeps_on_chip_ ? kFakeChain : kFake; }
  backends::BackendTraits traits() const override {
    return backends::BackendTraits{.keeps_intermediates_on_chip = keeps_on_chip_};
  }
  backends::Support supports(const ir::Node& node, const backends::PlanView& plan) const override {
    using backends::Support;
    using backends::SupportReason;
    if (node.op_type != "Conv" && node.op_type != "Relu" && node.op_type != "Add" && node.op_type != "MaxPool") {
      return Support::no(SupportReason::kUnsupportedOp, "no " + node.op_type + " unit");
    }
    for (const ir::Value* v : node.inputs) {
      if (!v || v->constant) continue;
      const ir::TensorType& t = plan.type(v);
      if (t.dtype != ir::DType::kF32) return Support::no(SupportReason::kDtype, v->name + " is not f32");
      if (!t.shape.is_static()) return Support::no(SupportReason::kDynamicShape, v->name);
      if (t.shape.rank() != 4) return Support::no(SupportReason::kRank, v->name);
    }
    return Support::native();
  }
  Result<std::unique_ptr<backends::CompiledPartition>> compile(const backends::Partition& partition,
                                                               const backends::CompileContext& ctx) override {
    NFUSE_ASSIGN_OR_RETURN(auto cpu, backends::BackendRegistry::global().create("cpu"));
    backends::Partition p = partition;
    p.backend = "cpu";
    return cpu->compile(p, ctx);
  }

 private:
  bool keeps_on_chip_;
};

std::unique_ptr<backends::Backend> make_fake() { return std::make_unique<FakeNpu>(false); }
std::unique_ptr<backends::Backend> make_fake_chain() { return std::make_unique<FakeNpu>(true); }
NFUSE_REGISTER_BACKEND(kFake, make_fake);
NFUSE_REGISTER_BACKEND(kFakeChain, make_fake_chain);

const std::map<std::string, std::vector<int64_t>> kDims = {{"x", {1, 3, 16, 16}}};

partition::PartitionOptions prefer_fake() {
  partition::PartitionOptions o;
  o.prefer = {kFake, "cpu"};
  return o;
}

TEST(PartitionPasses, PreferredBackendTakesWhatItSupportsWithReasons) {
  auto g = load(small_cnn());
  auto r = place(*g, kDims, "auto", prefer_fake(), test_profile(2.0, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(placements(*r),
            "conv1:fake_npu relu1:fake_npu conv2:fake_npu sig1:cpu relu2:fake_npu sig2:cpu conv3:fake_npu "
            "relu3:fake_npu pool:fake_npu gap:cpu flat:cpu fc:cpu ");
  EXPECT_EQ(placement(*r, "sig1").reason, partition::Reason::kUnsupportedOp);
  EXPECT_EQ(placement(*r, "sig1").reason_text(), "unsupported op (fake_npu: no Sigmoid unit)");
  EXPECT_EQ(placement(*r, "flat").reason, partition::Reason::kUnsupportedOp);
  EXPECT_EQ(placement(*r, "conv1").reason_text(), "");
  ASSERT_EQ(r->partitions.size(), 6u);
  EXPECT_EQ(r->fallback, "cpu");
  EXPECT_NEAR(r->fallback_ratio_nodes, 5.0 / 12.0, 1e-12);
  EXPECT_GT(r->fallback_ratio_time, 0.0);
  EXPECT_LT(r->fallback_ratio_time, 1.0);
  ASSERT_FALSE(r->warnings.empty());
  EXPECT_NE(r->warnings.back().find("5 of 12 nodes"), std::string::npos) << r->warnings.back();
  // Every boundary between a fake and a cpu partition is an explicit transfer of its tensor.
  ASSERT_EQ(r->transfers.size(), 5u);
  EXPECT_EQ(r->transfers[0].value->name, "c2");
  EXPECT_EQ(r->transfers[0].from, kFake);
  EXPECT_EQ(r->transfers[0].to, "cpu");
  EXPECT_EQ(r->transfers[0].bytes, 16 * 16 * 16 * 4);
  EXPECT_EQ(r->partitions[0].inputs.size(), 1u);
  EXPECT_EQ(r->partitions[0].inputs[0]->name, "x");
  ASSERT_EQ(r->partitions[0].outputs.size(), 1u);
  EXPECT_EQ(r->partitions[0].outputs[0]->name, "c2");
}

TEST(PartitionPasses, ReasonsForRankAndDtypeFromTheBackendsWords) {
  // Flatten is refused by op; feed the fake a 2-D Relu to see "rank != 4".
  OnnxBuilder b;
  b.input("x", kF, {4, 8});
  b.node("Relu", {"x"}, {"y"}, "relu2d");
  float_output(b, "y");
  auto g = load(b);
  auto r = place(*g, {{"x", {4, 8}}}, "auto", prefer_fake(), test_profile(2.0, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(placement(*r, "relu2d").backend, "cpu");
  EXPECT_EQ(placement(*r, "relu2d").reason, partition::Reason::kRank);
  EXPECT_EQ(placement(*r, "relu2d").reason_text(), "rank != 4 (fake_npu: x)");
}

TEST(PartitionPasses, PinsByNameWinOverPinsByOpType) {
  auto g = load(small_cnn());
  partition::PartitionOptions o = prefer_fake();
  o.pins["Relu"] = "cpu";
  o.pins["relu2"] = kFake;
  auto r = place(*g, kDims, "auto", o, test_profile(2.0, 5.0));  // boundaries dear: pins still hold
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(placement(*r, "relu1").backend, "cpu");
  EXPECT_EQ(placement(*r, "relu1").reason, partition::Reason::kPinned);
  EXPECT_EQ(placement(*r, "relu3").backend, "cpu");
  EXPECT_EQ(placement(*r, "relu2").backend, kFake);
  EXPECT_EQ(placement(*r, "relu2").reason, partition::Reason::kNone);

  partition::PartitionOptions bad = prefer_fake();
  bad.pins["sig1"] = kFake;
  auto e = place(*g, kDims, "auto", bad, test_profile(2.0, 0.0));
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kUnsupported);
  EXPECT_NE(e.status().message().find("'sig1' is pinned to 'fake_npu'"), std::string::npos) << e.status().message();

  partition::PartitionOptions unknown = prefer_fake();
  unknown.pins["relu1"] = "warp_drive";
  auto u = place(*g, kDims, "auto", unknown, test_profile(2.0, 0.0));
  ASSERT_FALSE(u.ok());
  EXPECT_EQ(u.status().code(), StatusCode::kNotFound);

  partition::PartitionOptions stray = prefer_fake();
  stray.pins["no_such_node"] = "cpu";
  auto w = place(*g, kDims, "auto", stray, test_profile(2.0, 0.0));
  ASSERT_TRUE(w.ok());
  EXPECT_EQ(w->warnings.front(), "pin 'no_such_node' matches no node name or op type of the (optimized) graph");
}

TEST(PartitionPasses, DeniedOpTypesGoToTheFallback) {
  auto g = load(small_cnn());
  partition::PartitionOptions o = prefer_fake();
  o.deny = {"Conv"};
  auto r = place(*g, kDims, "auto", o, test_profile(2.0, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (const char* conv : {"conv1", "conv2", "conv3"}) {
    EXPECT_EQ(placement(*r, conv).backend, "cpu") << conv;
    EXPECT_EQ(placement(*r, conv).reason, partition::Reason::kDenied) << conv;
  }
  EXPECT_EQ(placement(*r, "pool").backend, kFake);
}

TEST(PartitionPasses, PreferOrderDecidesAndNamedBackendKeepsPins) {
  auto g = load(small_cnn());
  partition::PartitionOptions cpu_first;
  cpu_first.prefer = {"cpu", kFake};
  auto r = place(*g, kDims, "auto", cpu_first, test_profile(2.0, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  for (const auto& p : r->nodes) EXPECT_EQ(p.backend, "cpu") << p.node->name;
  EXPECT_EQ(r->fallback, kFake);
  EXPECT_EQ(r->fallback_ratio_nodes, 0.0);
  EXPECT_TRUE(r->warnings.empty());

  // A named backend: prefer = {it}, fallback cpu; a pin still moves one node.
  partition::PartitionOptions pinned;
  pinned.pins["relu2"] = kFake;
  auto n = place(*g, kDims, "cpu", pinned, test_profile(2.0, 0.0));
  ASSERT_TRUE(n.ok()) << n.status().to_string();
  EXPECT_EQ(n->prefer, std::vector<std::string>{"cpu"});
  EXPECT_EQ(placement(*n, "relu2").backend, kFake);
  EXPECT_EQ(placement(*n, "relu2").reason, partition::Reason::kPinned);
  EXPECT_EQ(n->partitions.size(), 3u);
  EXPECT_NEAR(n->fallback_ratio_nodes, 1.0 / 12.0, 1e-12);

  // Named, the fake keeps its nodes even when it is slow and boundaries are dear.
  auto slow = place(*g, kDims, kFake, {}, test_profile(0.1, 5.0));
  ASSERT_TRUE(slow.ok()) << slow.status().to_string();
  EXPECT_EQ(placement(*slow, "conv1").backend, kFake);
  EXPECT_EQ(placement(*slow, "relu2").backend, kFake);
  EXPECT_EQ(placement(*slow, "sig1").backend, "cpu");

  partition::PartitionOptions both;
  both.prefer = {kFake};
  EXPECT_EQ(place(*g, kDims, "cpu", both, test_profile(2.0, 0.0)).status().code(), StatusCode::kInvalidArgument);
}

TEST(PartitionPasses, PingPongNodeMovesOnlyWhenBoundariesCostMore) {
  // 64x64: the conv partitions gain more than a boundary costs; relu2 does not.
  auto g = load(small_cnn(64, 64));
  const std::map<std::string, std::vector<int64_t>> dims = {{"x", {1, 3, 64, 64}}};
  // relu2 alone between two Sigmoids on cpu: two boundaries of 5 us outweigh its gain.
  auto dear = place(*g, dims, "auto", prefer_fake(), test_profile(2.0, 5.0));
  ASSERT_TRUE(dear.ok()) << dear.status().to_string();
  EXPECT_EQ(placement(*dear, "relu2").backend, "cpu") << placements(*dear);
  EXPECT_EQ(placement(*dear, "relu2").reason, partition::Reason::kCost);
  EXPECT_EQ(placement(*dear, "conv1").backend, kFake) << placements(*dear);
  // Free boundaries: the faster backend keeps it.
  auto free = place(*g, dims, "auto", prefer_fake(), test_profile(2.0, 0.0));
  ASSERT_TRUE(free.ok());
  EXPECT_EQ(placement(*free, "relu2").backend, kFake) << placements(*free);
}

TEST(PartitionPasses, PartitionThatDoesNotPayIsRefused) {
  auto g = load(small_cnn());
  // A fake 10x slower than cpu: none of its partitions pays.
  auto slow = place(*g, kDims, "auto", prefer_fake(), test_profile(0.1, 0.0));
  ASSERT_TRUE(slow.ok()) << slow.status().to_string();
  for (const auto& p : slow->nodes) EXPECT_EQ(p.backend, "cpu") << placements(*slow);
  EXPECT_EQ(placement(*slow, "conv1").reason, partition::Reason::kCost);
  EXPECT_EQ(placement(*slow, "sig1").reason, partition::Reason::kUnsupportedOp);
  EXPECT_EQ(slow->partitions.size(), 1u);
  EXPECT_TRUE(slow->transfers.empty());
  // Equal speed: the fake saves nothing and each partition adds boundaries, so "not below" refuses.
  auto equal = place(*g, kDims, "auto", prefer_fake(), test_profile(1.0, 1.0));
  ASSERT_TRUE(equal.ok());
  EXPECT_EQ(placement(*equal, "conv1").backend, "cpu") << placements(*equal);
}

// A partition that pays as a whole but starts with a 3x3 convolution the cpu runs as Winograd
// (2.25x fewer multiplies; the fake has none): the convolution alone is peeled off to cpu.
TEST(PartitionPasses, NodeComputingSlowerThereIsPeeledOff) {
  OnnxBuilder b;
  b.input("x", kF, {1, 32, 64, 64});
  random_init(b, "w3", {32, 32, 3, 3}, 1);
  random_init(b, "w1", {64, 32, 1, 1}, 2);
  random_init(b, "w2", {32, 64, 1, 1}, 3);
  set_ints_attr(b.node("Conv", {"x", "w3"}, {"c3"}, "conv3x3"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"c3"}, {"r3"}, "relu3x3");
  b.node("Conv", {"r3", "w1"}, {"c1"}, "expand");
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("Conv", {"r1", "w2"}, {"y"}, "project");
  float_output(b, "y");
  auto g = load(b);
  const std::map<std::string, std::vector<int64_t>> dims = {{"x", {1, 32, 64, 64}}};
  auto r = place(*g, dims, "auto", prefer_fake(), test_profile(1.5, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(placement(*r, "conv3x3").backend, "cpu") << placements(*r);
  EXPECT_EQ(placement(*r, "conv3x3").reason, partition::Reason::kCost);
  for (const char* n : {"relu3x3", "expand", "relu1", "project"}) EXPECT_EQ(placement(*r, n).backend, kFake) << placements(*r);
}

// Graph order conv1, sig, relu1, add interleaves a Sigmoid (cpu) with the fake's chain. For a
// backend that keeps intermediates on chip the chain's links move next to each other, so one
// partition runs them; otherwise graph order stands and the chain is cut in two.
TEST(PartitionPasses, ChainsInterleavedWithOtherBranchesBecomeContiguous) {
  OnnxBuilder b;
  b.input("x", kF, {1, 8, 16, 16});
  random_init(b, "w", {8, 8, 1, 1}, 1);
  b.node("Conv", {"x", "w"}, {"c1"}, "conv1");
  b.node("Sigmoid", {"x"}, {"s"}, "sig");
  b.node("Relu", {"c1"}, {"r1"}, "relu1");
  b.node("Add", {"r1", "s"}, {"y"}, "add");
  float_output(b, "y");
  auto g = load(b);
  const std::map<std::string, std::vector<int64_t>> dims = {{"x", {1, 8, 16, 16}}};
  partition::PartitionOptions o;
  o.prefer = {kFake};
  backends::DeviceProfile profile = test_profile(2.0, 0.0);
  auto graph_order = place(*g, dims, kFake, o, profile);
  ASSERT_TRUE(graph_order.ok()) << graph_order.status().to_string();
  EXPECT_EQ(placements(*graph_order), "conv1:fake_npu sig:cpu relu1:fake_npu add:fake_npu ");
  EXPECT_EQ(graph_order->partitions.size(), 3u);
  o.prefer = {kFakeChain};
  auto clustered = place(*g, dims, kFakeChain, o, profile);
  ASSERT_TRUE(clustered.ok()) << clustered.status().to_string();
  EXPECT_EQ(placements(*clustered), "sig:cpu conv1:fake_chain_npu relu1:fake_chain_npu add:fake_chain_npu ");
  EXPECT_EQ(clustered->partitions.size(), 2u);
}

// A node with two chained inputs: the side one (a single node) is emitted with the other's chain,
// after everything that chain pulls in, so both end next to their reader (an FPN's upsampled map
// beside the lateral chain its Concat continues).
TEST(PartitionPasses, SideInputsLandBesideTheirReader) {
  OnnxBuilder b;
  b.input("x", kF, {1, 8, 16, 16});
  random_init(b, "w", {8, 8, 1, 1}, 1);
  b.node("Relu", {"x"}, {"side"}, "relu_side");
  b.node("Conv", {"x", "w"}, {"t"}, "conv_t");
  b.node("Add", {"x", "t"}, {"main"}, "add1");
  b.node("Add", {"side", "main"}, {"y"}, "add2");
  float_output(b, "y");
  auto g = load(b);
  const std::map<std::string, std::vector<int64_t>> dims = {{"x", {1, 8, 16, 16}}};
  partition::PartitionOptions o;
  o.prefer = {kFakeChain};
  o.pins["conv_t"] = "cpu";
  auto r = place(*g, dims, kFakeChain, o, test_profile(2.0, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(placements(*r), "conv_t:cpu relu_side:fake_chain_npu add1:fake_chain_npu add2:fake_chain_npu ");
  EXPECT_EQ(r->partitions.size(), 2u);
}

// A chain link reading a small operand (a per-channel scale) besides the full-size value it
// continues: the operand's producer comes first and the chain's producer last, right before the
// reader, whatever their input order. Otherwise the operand's producer sits between the chain's
// links, and when its backend gives it back as too small to pay, it cuts the chain in two.
TEST(PartitionPasses, SmallOperandsComeBeforeTheChainTheirReaderContinues) {
  OnnxBuilder b;
  b.input("x", kF, {1, 8, 16, 16});
  b.input("s", kF, {1, 8, 1, 1});
  random_init(b, "w", {8, 8, 1, 1}, 1);
  b.node("Conv", {"x", "w"}, {"c1"}, "conv1");
  b.node("Relu", {"s"}, {"rs"}, "relu_scale");
  b.node("Add", {"c1", "rs"}, {"y"}, "add");
  float_output(b, "y");
  auto g = load(b);
  const std::map<std::string, std::vector<int64_t>> dims = {{"x", {1, 8, 16, 16}}, {"s", {1, 8, 1, 1}}};
  partition::PartitionOptions o;
  o.prefer = {kFakeChain};
  auto r = place(*g, dims, kFakeChain, o, test_profile(2.0, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  EXPECT_EQ(placements(*r), "relu_scale:fake_chain_npu conv1:fake_chain_npu add:fake_chain_npu ");
}

TEST(PartitionPasses, RequireFullOffloadListsEveryNodeOffThePreferredBackend) {
  auto g = load(small_cnn());
  partition::PartitionOptions o = prefer_fake();
  o.require_full_offload = true;
  // Slow fake: cost alone would refuse its partitions, but full offload keeps them; only the
  // nodes it cannot run are listed.
  auto r = place(*g, kDims, "auto", o, test_profile(0.1, 0.0));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kUnsupported);
  const std::string m = r.status().message();
  EXPECT_NE(m.find("5 of 12 nodes would not run on 'fake_npu'"), std::string::npos) << m;
  for (const char* line : {"sig1 (Sigmoid) on cpu: unsupported op (fake_npu: no Sigmoid unit)", "sig2 (Sigmoid)",
                           "gap (GlobalAveragePool)", "flat (Flatten)", "fc (Gemm)"}) {
    EXPECT_NE(m.find(line), std::string::npos) << line << " in\n" << m;
  }
  EXPECT_EQ(m.find("conv1"), std::string::npos) << m;
  // Nothing off the preferred backend: no error.
  partition::PartitionOptions cpu_only;
  cpu_only.prefer = {"cpu"};
  cpu_only.require_full_offload = true;
  EXPECT_TRUE(place(*g, kDims, "auto", cpu_only, test_profile(1.0, 0.0)).ok());
}

TEST(PartitionPasses, SameInputSameResult) {
  auto g = load(small_cnn());
  partition::PartitionOptions o = prefer_fake();
  o.pins["relu3"] = "ref";
  o.deny = {"MaxPool"};
  std::string first;
  for (int i = 0; i < 3; ++i) {
    auto r = place(*g, kDims, "auto", o, test_profile(2.0, 0.5));
    ASSERT_TRUE(r.ok()) << r.status().to_string();
    const std::string json = partition::partition_report_json(*r, "cnn.onnx");
    if (i == 0) first = json;
    EXPECT_EQ(json, first);
  }
}

TEST(PartitionPasses, ReportJsonHasTheDocumentedKeys) {
  auto g = load(small_cnn());
  auto r = place(*g, kDims, "auto", prefer_fake(), test_profile(2.0, 0.0));
  ASSERT_TRUE(r.ok()) << r.status().to_string();
  const auto j = nlohmann::json::parse(partition::partition_report_json(*r, "cnn.onnx"));
  for (const char* key : {"model", "prefer", "fallback", "device_profile", "nodes", "partitions", "transfers",
                          "fallback_ratio_nodes", "fallback_ratio_time", "warnings", "est_total_us"}) {
    EXPECT_TRUE(j.contains(key)) << key;
  }
  EXPECT_EQ(j["model"], "cnn.onnx");
  EXPECT_EQ(j["prefer"], nlohmann::json({kFake, "cpu"}));
  ASSERT_EQ(j["nodes"].size(), 12u);
  for (const auto& n : j["nodes"])
    for (const char* key : {"name", "op", "backend", "reason", "est_us"}) EXPECT_TRUE(n.contains(key)) << key;
  EXPECT_EQ(j["nodes"][3]["reason"], "unsupported op (fake_npu: no Sigmoid unit)");
  size_t nodes_in_partitions = 0;
  for (size_t i = 0; i < j["partitions"].size(); ++i) {
    const auto& p = j["partitions"][i];
    EXPECT_EQ(p["index"], i);
    for (const char* key : {"backend", "nodes", "inputs", "outputs", "est_us"}) EXPECT_TRUE(p.contains(key)) << key;
    nodes_in_partitions += p["nodes"].size();
  }
  EXPECT_EQ(nodes_in_partitions, 12u);
  ASSERT_EQ(j["transfers"].size(), 5u);
  for (const auto& t : j["transfers"]) {
    for (const char* key : {"tensor", "from", "to", "bytes", "est_us"}) EXPECT_TRUE(t.contains(key)) << key;
    EXPECT_NE(t["from"], t["to"]);
  }
  EXPECT_EQ(j["device_profile"]["source"], "test");
  const std::string summary = partition::partition_summary(*r);
  EXPECT_NE(summary.find("6 partitions, 5 transfers"), std::string::npos) << summary;
}

}  // namespace
}  // namespace nfuse::partition_test
