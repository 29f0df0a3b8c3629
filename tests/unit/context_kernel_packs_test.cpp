// Context binaries of the kernels the zoo does not reach: transposed convolutions (the upsampling
// kind and the overlapping kind, cpu op and fusion member), QLinearMatMul (8- and 16-bit), W8A16
// convolutions, int8 depthwise convolutions (cpu op and fusion member), LSTM and GRU,
// MatMulNBits, a fused MatMul member and the f32 depthwise channel blocks. Each graph, compiled as
// `nfuse compile` records it and loaded back, must pack nothing at load on the CPU that compiled
// it (every kernel reads its packed weights from the binary), hold the families its kernels pack,
// and answer its first inference bit for bit as the compiling session did, also with every
// canonical weight that a packed twin replaces inverted (no kernel reads a weight beside its twin).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "backends/pack_store.h"
#include "compile/context/context_writer.h"
#include "compile/context/device_facts.h"
#include "ir/graph.h"
#include "ir/infer_shapes.h"
#include "runtime/context_model.h"
#include "runtime/session.h"
#include "support/context_round_trip.h"
#include "support/qchain_graph.h"
#include "support/w8a16_graph.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;

// Builds f32 graphs with random constants from one seed.
class F32Graph {
 public:
  F32Graph() : g_(std::make_unique<ir::Graph>()) {
    g_->name = "kernels";
    g_->opsets[""] = 17;
    g_->opsets["com.microsoft"] = 1;
  }
  ir::Value* input(const std::string& name, std::vector<int64_t> dims) {
    ir::Value* v = g_->add_value(name, {ir::DType::kF32, ir::Shape::from_dims(dims)}).value();
    g_->inputs().push_back(v);
    ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, dims);
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng_);
    feeds_.push_back({name, std::move(t)});
    return v;
  }
  ir::Value* constant(ir::Tensor t) {
    ir::Value* v = g_->add_value("c" + std::to_string(next_++), {t.dtype(), ir::Shape::from_dims(t.dims())}).value();
    v->constant = std::move(t);
    return v;
  }
  ir::Value* random(std::vector<int64_t> dims, float scale = 0.3f) {
    ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, dims);
    std::uniform_real_distribution<float> d(-scale, scale);
    for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng_);
    return constant(std::move(t));
  }
  ir::Value* bytes(ir::DType dtype, std::vector<int64_t> dims, int lo, int hi) {
    ir::Tensor t = ir::Tensor::allocate(dtype, dims);
    std::uniform_int_distribution<int> d(lo, hi);
    for (int64_t i = 0; i < t.numel(); ++i) static_cast<uint8_t*>(t.raw())[i] = static_cast<uint8_t>(d(rng_));
    return constant(std::move(t));
  }
  ir::Value* node(const std::string& op, std::vector<ir::Value*> ins, ir::Attributes a = {},
                  const std::string& domain = "") {
    ir::Value* y = g_->add_value("v" + std::to_string(next_++)).value();
    ir::Node* n = g_->add_node(op, "n" + std::to_string(next_++), std::move(ins), {y}, a);
    n->domain = domain;
    n->opset = domain.empty() ? 17 : 1;
    return y;
  }
  ir::Value* conv(ir::Value* x, int64_t ci, int64_t co, int64_t k, int64_t group = 1) {
    ir::Attributes a;
    a.set("pads", std::vector<int64_t>{k / 2, k / 2, k / 2, k / 2});
    a.set("group", group);
    return node("Conv", {x, random({co, ci / group, k, k}), random({co})}, a);
  }
  ir::Value* deconv(ir::Value* x, int64_t ci, int64_t co, int64_t k, int64_t stride, int64_t pad, int64_t out_pad) {
    ir::Attributes a;
    a.set("strides", std::vector<int64_t>{stride, stride});
    a.set("pads", std::vector<int64_t>{pad, pad, pad, pad});
    if (out_pad) a.set("output_padding", std::vector<int64_t>{out_pad, out_pad});
    return node("ConvTranspose", {x, random({ci, co, k, k}), random({co})}, a);
  }
  std::unique_ptr<ir::Graph> finish(ir::Value* y) {
    g_->outputs().push_back(y);
    g_->relink();
    EXPECT_TRUE(ir::infer_shapes(*g_).ok());
    return std::move(g_);
  }
  const runtime::NamedTensors& feeds() const { return feeds_; }

 private:
  std::mt19937 rng_{11};
  std::unique_ptr<ir::Graph> g_;
  runtime::NamedTensors feeds_;
  int next_ = 0;
};

using testing::Case;
using testing::expect_packed_round_trip;

// Conv -> ConvTranspose k2 s2 (no overlap: UpsampleDeconv) -> Relu -> ConvTranspose k3 s2 p1
// op1 (overlapping taps: the GEMM + col2im op, RowDeconv in a strip) -> Conv.
Case deconv_case() {
  F32Graph b;
  ir::Value* x = b.input("x", {1, 8, 7, 6});
  ir::Value* y = b.conv(x, 8, 8, 3);
  y = b.deconv(y, 8, 6, 2, 2, 0, 0);
  y = b.node("Relu", {y});
  y = b.deconv(y, 6, 4, 3, 2, 1, 1);
  y = b.conv(y, 4, 4, 3);
  return {"deconv", b.finish(y), b.feeds()};
}

TEST(ContextKernelPacks, TransposedConvolutions) {
  expect_packed_round_trip(deconv_case(), "cpu", {"f32.deconv.upsample|", "f32.deconv.gemm|"});
  expect_packed_round_trip(deconv_case(), "fusion", {"f32.deconv.upsample|", "f32.deconv.rows|"});
}

Case w8a16_case(const std::string& what, int bits) {
  testing::W8A16Spec s;
  s.bits = bits;
  s.c = 16, s.co = 24, s.h = 9, s.w = 11;
  testing::W8A16GraphBuilder b(s);
  Case c{what, what == "matmul" ? b.matmul(5, 24, 20) : b.conv(), {}};
  const std::vector<int64_t> dims =
      what == "matmul" ? std::vector<int64_t>{2, 5, 24} : std::vector<int64_t>{s.n, s.c, s.h, s.w};
  ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, dims);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> d(-s.x_range, s.x_range);
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = d(rng);
  c.feeds.push_back({"x", std::move(x)});
  c.name += std::to_string(bits);
  return c;
}

TEST(ContextKernelPacks, QuantizedMatMulsAndW8A16Convolutions) {
  expect_packed_round_trip(w8a16_case("matmul", 8), "cpu", {"q8.matmul.gemm."});
  expect_packed_round_trip(w8a16_case("matmul", 16), "cpu", {"q16.matmul.gemm."});
  expect_packed_round_trip(w8a16_case("conv", 16), "cpu", {"q16.conv."});
}

Case qchain_case(int bits) {
  testing::QChain q({1, 8, 13, 11}, false, 3, bits);
  q.qconv(24, 1, 1, 0, 1).qconv(24, 3, 1, 1, 24).qconv(16, 3, 2, 1, 1).qconv(8, 1, 1, 0, 1);
  return {"qchain" + std::to_string(bits), q.graph(), q.feeds()};
}

TEST(ContextKernelPacks, IntegerChainsOnCpuAndAsFusedGroups) {
  expect_packed_round_trip(qchain_case(8), "cpu", {"q8.conv.", "q8.dwconv.taps|"});
  expect_packed_round_trip(qchain_case(8), "fusion", {"q8.strip.wx.", "q8.dwconv.taps|"});
  expect_packed_round_trip(qchain_case(16), "cpu", {"q16.conv."});
  expect_packed_round_trip(qchain_case(16), "fusion", {"q16.conv.gemm."});
}

Case rnn_case(const std::string& op) {
  F32Graph b;
  const int64_t seq = 5, batch = 2, input = 6, hidden = 7, gates = op == "LSTM" ? 4 : 3;
  const int64_t dirs = op == "LSTM" ? 2 : 1;
  ir::Value* x = b.input("x", {seq, batch, input});
  ir::Attributes a;
  a.set("hidden_size", hidden);
  if (op == "LSTM") a.set("direction", std::string("bidirectional"));
  ir::Value* y = b.node(op,
                        {x, b.random({dirs, gates * hidden, input}), b.random({dirs, gates * hidden, hidden}),
                         b.random({dirs, 2 * gates * hidden})},
                        a);
  return {op, b.finish(y), b.feeds()};
}

TEST(ContextKernelPacks, RecurrentLayers) {
  expect_packed_round_trip(rnn_case("LSTM"), "cpu", {"f32.rnn.pack_b|"});
  expect_packed_round_trip(rnn_case("GRU"), "cpu", {"f32.rnn.pack_b|"});
}

TEST(ContextKernelPacks, FourBitMatMul) {
  F32Graph b;
  const int64_t k = 40, n = 16, block = 16, blocks = (k + block - 1) / block;
  ir::Value* x = b.input("x", {3, k});
  ir::Attributes a;
  a.set("K", k);
  a.set("N", n);
  a.set("bits", int64_t{4});
  a.set("block_size", block);
  ir::Value* scales = b.random({n * blocks}, 0.05f);
  ir::Value* y = b.node("MatMulNBits",
                        {x, b.bytes(ir::DType::kU8, {n, blocks, block / 2}, 0, 255), scales,
                         b.bytes(ir::DType::kU8, {n * ((blocks + 1) / 2)}, 0, 255)},
                        a, "com.microsoft");
  expect_packed_round_trip({"nbits", b.finish(y), b.feeds()}, "cpu", {"f32.nbits4.pack_b|"});
}

// A MatMul on the rows of a 4-D tensor between convolutions: a fused group's member.
TEST(ContextKernelPacks, FusedMatMulMember) {
  F32Graph b;
  ir::Value* x = b.input("x", {1, 4, 9, 8});
  ir::Value* y = b.conv(x, 4, 4, 3);
  y = b.node("MatMul", {y, b.random({8, 8})});
  y = b.conv(y, 4, 4, 3);
  expect_packed_round_trip({"matmul_member", b.finish(y), b.feeds()}, "fusion", {"f32.strip.matmul.pack_b|"});
}

// f32 depthwise on small planes: its channel blocks' taps come from the binary, and since its
// per-plane kernels read the weights themselves, the weights stay checked at load.
TEST(ContextKernelPacks, DepthwiseChannelBlocks) {
  F32Graph b;
  ir::Value* x = b.input("x", {1, 32, 10, 12});
  ir::Value* y = b.conv(x, 32, 32, 3, 32);
  y = b.node("Relu", {y});
  expect_packed_round_trip({"dwconv", b.finish(y), b.feeds()}, "cpu", {"f32.dwconv.c16|"}, false);
}

// The strip heights a fusion binary stores: taken as they are when they fit (no search), clamped
// when too tall, chosen again by the cost model when nonsense or when the binary was compiled for
// another L2 size; the answer the same bit for bit in every case.
TEST(ContextKernelPacks, StoredStripHeightsAreTakenOrChosenAgain) {
  Case c = deconv_case();
  runtime::SessionOptions so;
  so.backend = "fusion";
  auto compiled = runtime::Session::create(std::move(c.graph), so);
  ASSERT_TRUE(compiled.ok()) << compiled.status().to_string();
  auto expected = (*compiled)->run(c.feeds);
  ASSERT_TRUE(expected.ok()) << expected.status().to_string();
  const std::map<std::string, std::vector<int64_t>> signature{{"x", c.feeds[0].second.dims()}};
  auto heights = [&signature](const runtime::Session& s) {
    std::vector<int> out;
    for (const compile::Step& step : s.cached_plan(signature)->steps)
      for (const backends::GroupTraffic& g : step.compiled->traffic().groups) out.push_back(g.tile_rows);
    return out;
  };
  const compile::Plan* plan = (*compiled)->cached_plan(signature);
  const std::vector<int> searched = heights(**compiled);
  ASSERT_FALSE(searched.empty()) << "the deconvolution graph forms no fused group";
  const ir::Node* first = nullptr;
  for (const compile::Step& step : plan->steps)
    for (const backends::GroupTraffic& g : step.compiled->traffic().groups) first = first ? first : g.first;
  ASSERT_NE(first, nullptr);
  const int other = searched[0] == 1 ? 2 : 1;

  struct Variant {
    int stored;
    size_t l2_bytes;  // 0: this CPU's
    int expect;       // the first group's height; 0: the search's
  };
  const size_t here = context::this_device().l2_bytes;
  for (const Variant& v :
       {Variant{other, 0, other}, Variant{-7, 0, 0}, Variant{1 << 20, 0, -1}, Variant{other, here * 2 + 4096, 0}}) {
    SCOPED_TRACE("stored " + std::to_string(v.stored) + ", l2 " + std::to_string(v.l2_bytes));
    context::ContextInfo info;
    context::record_device(&info);
    if (v.l2_bytes) info.l2_bytes = v.l2_bytes;
    info.options.backend = "fusion";
    info.backends = {"fusion"};
    info.signatures = {signature};
    const compile::StoredLayout layout{signature, 1, {{first, v.stored}}, plan->tensor_offsets, plan->memory.offsets};
    const fs::path nfc = fs::temp_directory_path() / ("nfuse_strip_heights_" + std::to_string(::getpid()) + ".nfc");
    ASSERT_TRUE(context::write_context((*compiled)->graph(), info, nfc.string(), {}, {}, {layout}).ok());
    auto binary = runtime::ContextModel::open_file(nfc.string(), {});
    ASSERT_TRUE(binary.ok()) << binary.status().to_string();
    auto session = testing::binary_session(**binary);
    ASSERT_TRUE(session.ok()) << session.status().to_string();
    auto got = (*session)->run(c.feeds);
    ASSERT_TRUE(got.ok()) << got.status().to_string();
    const std::vector<int> loaded = heights(**session);
    ASSERT_EQ(loaded.size(), searched.size());
    if (v.expect > 0) {
      EXPECT_EQ(loaded[0], v.expect);
    } else if (v.expect == 0) {
      EXPECT_EQ(loaded[0], searched[0]);
    } else {
      EXPECT_LT(loaded[0], v.stored) << "clamped to the group's height";
    }
    ASSERT_EQ((*got)[0].bytes(), (*expected)[0].bytes());
    EXPECT_EQ(std::memcmp((*got)[0].raw(), (*expected)[0].raw(), (*got)[0].bytes()), 0);
    fs::remove(nfc);
  }
}

}  // namespace
}  // namespace nfuse
