// fuse_qdq_lookup: DequantizeLinear -> element-wise float ops -> QuantizeLinear regions become
// nfuse.QLinearLookup. The oracle is the unfused QDQ graph on the ref interpreter: over all 256
// input codes the fused graph must give the same bytes. Also: the declines, the cpu backend
// (x8-lut kernels, threaded on large tensors) against the unfused graph on ref, and the pass in
// the default pipeline of a Session.
#include "passes/fuse_qdq_lookup.h"
#include "backends/ref/interpreter.h"
#include "backends/run_profile.h"
#include "ir/graph_copy.h"
#include "ir/infer_shapes.h"
#include "kernels/f32-region/f32_region.h"
#include "ops/qlinear_region.h"

#include <cstring>
#include <functional>

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

constexpr int kU8 = ::onnx::TensorProto::UINT8;
constexpr int kI8 = ::onnx::TensorProto::INT8;
constexpr int kU16 = ::onnx::TensorProto::UINT16;
constexpr int kI16 = ::onnx::TensorProto::INT16;

struct Spec {
  bool x_signed = false;
  bool y_signed = false;
  float x_scale = 0.05f;
  int64_t x_zp = 128;  // in x's type (clamped for s8)
  float y_scale = 1.0f / 128;
  int64_t y_zp = 0;
  std::vector<int64_t> dims = {256};
  bool dq_output_used_elsewhere = false;
  bool wide = false;  // 16-bit x_q and y_q (com.microsoft Q/DQ): x_zp in u16 terms, shifted by 32768 for s16
};

using Body = std::function<std::string(OnnxBuilder&, const std::string& x)>;  // returns f(x)'s name

// x_q -> DequantizeLinear -> body -> QuantizeLinear -> y_q (both graph input/output 8-bit, or
// 16-bit with s.wide, as ORT's com.microsoft Q/DQ since nfuse imports opsets up to 17).
OnnxBuilder build(const Spec& s, const Body& body) {
  OnnxBuilder b(17);
  auto* op = b.model().add_opset_import();
  op->set_domain("nfuse");
  op->set_version(1);
  if (s.wide) {
    auto* ms = b.model().add_opset_import();
    ms->set_domain("com.microsoft");
    ms->set_version(1);
  }
  const char* qdq_domain = s.wide ? "com.microsoft" : "";
  const int xt = s.wide ? (s.x_signed ? kI16 : kU16) : (s.x_signed ? kI8 : kU8);
  const int yt = s.wide ? (s.y_signed ? kI16 : kU16) : (s.y_signed ? kI8 : kU8);
  b.input("x_q", xt, s.dims);
  b.initializer("x_scale", {}, {s.x_scale});
  int_initializer(b, "x_zp", xt, {}, {s.x_signed ? s.x_zp - (s.wide ? 32768 : 128) : s.x_zp});
  b.node("DequantizeLinear", {"x_q", "x_scale", "x_zp"}, {"x"}, "dq").set_domain(qdq_domain);
  const std::string fx = body(b, "x");
  b.initializer("y_scale", {}, {s.y_scale});
  int_initializer(b, "y_zp", yt, {}, {s.y_zp});
  b.node("QuantizeLinear", {fx, "y_scale", "y_zp"}, {"y_q"}, "q").set_domain(qdq_domain);
  b.output("y_q", yt, s.dims);
  if (s.dq_output_used_elsewhere) {
    b.node("Relu", {"x"}, {"side"}, "side");
    out(b, "side");
  }
  return b;
}

Body unary(const std::string& op, const std::function<void(::onnx::NodeProto&)>& attrs = {}) {
  return [op, attrs](OnnxBuilder& b, const std::string& x) {
    auto& n = b.node(op, {x}, {"f"}, "act");
    if (attrs) attrs(n);
    return std::string("f");
  };
}

// Every input code (repeated to fill the shape), as the input's 8- or 16-bit type.
ir::Tensor all_codes(const ir::Value& x) {
  std::vector<int64_t> dims;
  for (const ir::Dim& d : x.type.shape.dims()) dims.push_back(d.value);
  ir::Tensor t = ir::Tensor::allocate(x.type.dtype, dims);
  if (t.dtype() == ir::DType::kU16 || t.dtype() == ir::DType::kI16) {
    auto* p = static_cast<uint16_t*>(t.raw());
    for (int64_t i = 0; i < t.numel(); ++i)
      p[i] = static_cast<uint16_t>((i * 40503 + 7) & 0xFFFF);  // every code per 65536
    return t;
  }
  auto* p = static_cast<uint8_t*>(t.raw());
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<uint8_t>((i * 181 + 7) & 0xFF);  // every byte per 256
  return t;
}

bool same_bytes(const ir::Tensor& a, const ir::Tensor& b) {
  return a.dtype() == b.dtype() && a.dims() == b.dims() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
}

// Runs the pass; expects `fused` rewrites and the fused graph byte-identical with the QDQ one on
// ref over all input codes. Returns the rewritten graph.
std::unique_ptr<ir::Graph> check(const Spec& s, const Body& body, bool fused, const std::string& what,
                                 bool with_evaluator = true) {
  SCOPED_TRACE(what);
  const OnnxBuilder b = build(s, body);
  auto before = load(b);
  auto after = load(b);
  if (!before || !after) return nullptr;
  PassLog log;
  Status st = fuse_qdq_lookup(*after, with_evaluator ? ref_evaluator() : NodeEvaluator(), log);
  EXPECT_TRUE(st.ok()) << st.to_string();
  Status v = after->verify();
  EXPECT_TRUE(v.ok()) << v.to_string();
  EXPECT_EQ(count_ops(*after, "QLinearLookup"), fused ? 1 : 0);
  EXPECT_EQ(count_ops(*after, "QuantizeLinear"), fused ? 0 : 1);
  EXPECT_EQ(log.size(), fused ? 1u : 0u);
  EXPECT_EQ(count_ops(*after, "DequantizeLinear"), fused && !s.dq_output_used_elsewhere ? 0 : 1);
  std::vector<ir::Tensor> inputs = {all_codes(*before->inputs()[0])};
  for (size_t i = 1; i < before->inputs().size(); ++i) {  // extra float inputs of the decline cases
    ir::Tensor t = ir::Tensor::allocate(ir::DType::kF32, before->inputs()[i]->type.shape.static_dims().value());
    std::fill(t.data<float>(), t.data<float>() + t.numel(), 0.5f);
    inputs.push_back(t);
  }
  auto expected = backends::ref::interpret_graph(*before, inputs);
  auto got = backends::ref::interpret_graph(*after, inputs);
  EXPECT_TRUE(expected.ok() && got.ok()) << (got.ok() ? "" : got.status().to_string());
  if (!expected.ok() || !got.ok()) return nullptr;
  for (size_t o = 0; o < expected->size(); ++o) {
    EXPECT_TRUE(same_bytes((*expected)[o], (*got)[o])) << "output " << o << " differs from the QDQ graph";
  }
  return after;
}

struct Case {
  std::string name;
  Body body;
};

std::vector<Case> activations() {
  auto f_attr = [](const std::string& n, float v) { return [n, v](::onnx::NodeProto& p) { set_float_attr(p, n, v); }; };
  std::vector<Case> c = {
      {"Sigmoid", unary("Sigmoid")},
      {"Tanh", unary("Tanh")},
      {"HardSwish", unary("HardSwish")},
      {"HardSigmoid", unary("HardSigmoid", [](::onnx::NodeProto& p) {
         set_float_attr(p, "alpha", 0.25f);
         set_float_attr(p, "beta", 0.4f);
       })},
      {"LeakyRelu", unary("LeakyRelu", f_attr("alpha", 0.1f))},
      {"Relu", unary("Relu")},
      {"Elu", unary("Elu", f_attr("alpha", 0.7f))},
      {"Softplus", unary("Softplus")},
      {"Exp", unary("Exp")},
      {"Neg", unary("Neg")},
      {"Abs", unary("Abs")},
      {"Erf", unary("Erf")},
      {"Gelu", [](OnnxBuilder& b, const std::string& x) {
         b.node("Gelu", {x}, {"f"}, "act").set_domain("nfuse");
         return std::string("f");
       }},
      {"Clip", [](OnnxBuilder& b, const std::string& x) {
         b.initializer("lo", {}, {-1.5f});
         b.initializer("hi", {}, {2.25f});
         b.node("Clip", {x, "lo", "hi"}, {"f"}, "act");
         return std::string("f");
       }},
      {"SiLU", [](OnnxBuilder& b, const std::string& x) {
         b.node("Sigmoid", {x}, {"s"}, "sig");
         b.node("Mul", {x, "s"}, {"f"}, "mul");
         return std::string("f");
       }},
      {"Mish (x * tanh(softplus(x)))", [](OnnxBuilder& b, const std::string& x) {
         b.node("Softplus", {x}, {"sp"}, "sp");
         b.node("Tanh", {"sp"}, {"th"}, "th");
         b.node("Mul", {"th", x}, {"f"}, "mul");
         return std::string("f");
       }},
      {"HardSwish as x * clip(x + 3, 0, 6) / 6", [](OnnxBuilder& b, const std::string& x) {
         b.initializer("three", {}, {3.0f});
         b.initializer("zero", {}, {0.0f});
         b.initializer("six", {}, {6.0f});
         b.node("Add", {x, "three"}, {"a"}, "add");
         b.node("Clip", {"a", "zero", "six"}, {"c"}, "clip");
         b.node("Mul", {x, "c"}, {"m"}, "mul");
         b.node("Div", {"m", "six"}, {"f"}, "div");
         return std::string("f");
       }},
      {"Tanh(LeakyRelu)", [](OnnxBuilder& b, const std::string& x) {
         auto& l = b.node("LeakyRelu", {x}, {"l"}, "leaky");
         set_float_attr(l, "alpha", 0.2f);
         b.node("Tanh", {"l"}, {"f"}, "tanh");
         return std::string("f");
       }},
  };
  return c;
}

TEST(FuseQdqLookup, EveryActivationBitExactOverAllCodes) {
  for (const Case& c : activations()) {
    for (int types = 0; types < 4; ++types) {
      Spec s;
      s.x_signed = types & 1;
      s.y_signed = types & 2;
      s.y_zp = s.y_signed ? -3 : 100;
      if (c.name == "Exp") s.x_scale = 0.01f;  // keep exp(x) mostly within y's range
      check(s, c.body, true, c.name + (s.x_signed ? " s8" : " u8") + (s.y_signed ? "->s8" : "->u8"));
    }
  }
}

TEST(FuseQdqLookup, TableValuesAndIndexing) {
  // y = Neg(x) with identical scales: table[i] for u8 codes is saturate(zp_y - (i - zp_x)).
  Spec s;
  s.x_scale = s.y_scale = 0.5f;
  s.x_zp = 100;
  s.y_zp = 50;
  auto g = check(s, unary("Neg"), true, "Neg u8");
  ASSERT_NE(g, nullptr);
  const ir::Node* l = find_op(*g, "QLinearLookup");
  ASSERT_NE(l, nullptr);
  EXPECT_EQ(l->domain, "nfuse");
  const ir::Tensor& t = *l->input(1)->constant;
  ASSERT_EQ(t.dims(), std::vector<int64_t>{256});
  for (int64_t i = 0; i < 256; ++i) EXPECT_EQ(t.get_int(i), std::clamp<int64_t>(50 - (i - 100), 0, 255)) << i;
  // s8 input: table index = x + 128.
  s.x_signed = true;
  g = check(s, unary("Neg"), true, "Neg s8");
  ASSERT_NE(g, nullptr);
  const ir::Tensor& ts = *find_op(*g, "QLinearLookup")->input(1)->constant;
  for (int64_t i = 0; i < 256; ++i) {
    EXPECT_EQ(ts.get_int(i), std::clamp<int64_t>(50 - ((i - 128) - (100 - 128)), 0, 255)) << i;
  }
}

TEST(FuseQdqLookup, KeepsADequantizeLinearUsedElsewhere) {
  Spec s;
  s.dq_output_used_elsewhere = true;
  check(s, unary("Sigmoid"), true, "x also feeds a Relu");
}

TEST(FuseQdqLookup, Declines) {
  check({}, unary("Sigmoid"), false, "no evaluator", /*with_evaluator=*/false);
  // An intermediate that is a graph output, or feeds a node outside the region.
  check({}, [](OnnxBuilder& b, const std::string& x) {
    b.node("Sigmoid", {x}, {"s"}, "sig");
    out(b, "s");
    b.node("Mul", {x, "s"}, {"f"}, "mul");
    return std::string("f");
  }, false, "intermediate is a graph output");
  check({}, [](OnnxBuilder& b, const std::string& x) {
    b.node("Sigmoid", {x}, {"s"}, "sig");
    b.node("Tanh", {"s"}, {"side"}, "side");
    out(b, "side");
    b.node("Neg", {"s"}, {"f"}, "neg");
    return std::string("f");
  }, false, "intermediate feeds a node outside");
  // Not element-wise / not a one-element constant operand.
  check({.dims = {2, 128}}, [](OnnxBuilder& b, const std::string& x) {
    set_int_attr(b.node("Softmax", {x}, {"f"}, "softmax"), "axis", 1);
    return std::string("f");
  }, false, "Softmax");
  check({.dims = {2, 128}}, [](OnnxBuilder& b, const std::string& x) {
    b.initializer("bias", {128}, std::vector<float>(128, 0.5f));
    b.node("Add", {x, "bias"}, {"f"}, "add");
    return std::string("f");
  }, false, "Add of a tensor constant");
  // A second non-constant input (a graph input) in the region.
  check(
      {},
      [](OnnxBuilder& b, const std::string& x) {
        b.input("other", kF, {256});
        b.node("Add", {x, "other"}, {"f"}, "add");
        return std::string("f");
      },
      false, "two data inputs");
}

TEST(FuseQdqLookup, DeclinesPerAxisAndNonConstantParameters) {
  {
    OnnxBuilder b(17);
    b.input("x_q", kU8, {2, 128});
    b.initializer("x_scale", {}, {0.05f});
    int_initializer(b, "x_zp", kU8, {}, {128});
    b.node("DequantizeLinear", {"x_q", "x_scale", "x_zp"}, {"x"}, "dq");
    b.node("Sigmoid", {"x"}, {"f"}, "act");
    b.initializer("y_scale", {2}, {0.01f, 0.02f});
    int_initializer(b, "y_zp", kU8, {2}, {0, 0});
    set_int_attr(b.node("QuantizeLinear", {"f", "y_scale", "y_zp"}, {"y_q"}, "q"), "axis", 0);
    b.output("y_q", kU8, {2, 128});
    auto g = load(b);
    ASSERT_NE(g, nullptr);
    PassLog log;
    ASSERT_TRUE(fuse_qdq_lookup(*g, ref_evaluator(), log).ok());
    EXPECT_EQ(count_ops(*g, "QLinearLookup"), 0) << "per-axis output quantization";
  }
  {
    OnnxBuilder b(17);
    b.input("x_q", kU8, {256});
    b.input("x_scale", kF, {});
    int_initializer(b, "x_zp", kU8, {}, {128});
    b.node("DequantizeLinear", {"x_q", "x_scale", "x_zp"}, {"x"}, "dq");
    b.node("Sigmoid", {"x"}, {"f"}, "act");
    b.initializer("y_scale", {}, {0.01f});
    int_initializer(b, "y_zp", kU8, {}, {0});
    b.node("QuantizeLinear", {"f", "y_scale", "y_zp"}, {"y_q"}, "q");
    b.output("y_q", kU8, {256});
    auto g = load(b);
    ASSERT_NE(g, nullptr);
    PassLog log;
    ASSERT_TRUE(fuse_qdq_lookup(*g, ref_evaluator(), log).ok());
    EXPECT_EQ(count_ops(*g, "QLinearLookup"), 0) << "scale is a graph input";
  }
}

// `b` on a cpu Session (fuse_qdq_lookup, then the x8-lut kernels) against the unfused QDQ graph
// on ref, over every input code: one lookup and the same bytes.
void expect_cpu_lookup_matches_ref(const OnnxBuilder& b, int threads) {
  auto ref_graph = load(b);
  auto cpu_graph = load(b);
  ASSERT_TRUE(ref_graph && cpu_graph);
  const ir::Tensor codes = all_codes(*ref_graph->inputs()[0]);
  runtime::SessionOptions ref_opt;
  ref_opt.optimize = false;
  auto ref = runtime::Session::create(std::move(ref_graph), ref_opt);
  ASSERT_TRUE(ref.ok()) << ref.status().to_string();
  runtime::SessionOptions cpu_opt;
  cpu_opt.backend = "cpu";
  cpu_opt.threads = threads;
  auto cpu = runtime::Session::create(std::move(cpu_graph), cpu_opt);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ((*cpu)->pass_report().num_changes("fuse_qdq_lookup"), 1u);
  EXPECT_EQ(count_ops((*cpu)->graph(), "QLinearLookup"), 1);
  auto e = (*ref)->run({{"x_q", codes}});
  auto g = (*cpu)->run({{"x_q", codes}});
  ASSERT_TRUE(e.ok() && g.ok()) << (g.ok() ? e.status().to_string() : g.status().to_string());
  EXPECT_TRUE(same_bytes((*e)[0], (*g)[0]));
}

// The default pipeline of a cpu Session (fuse_qdq_lookup, then the x8-lut kernels, threaded for
// large tensors) against the unfused QDQ graph on ref: the same bytes.
TEST(FuseQdqLookup, CpuSessionMatchesUnfusedRef) {
  for (const Case& c : activations()) {
    // The threaded size (above the op's 128 KiB split) for a few ops only: ref is slow there.
    const bool large = c.name == "Sigmoid" || c.name == "SiLU";
    std::vector<std::vector<int64_t>> shapes = {{256}, {3, 7, 61}};
    if (large) shapes.push_back({2, 256, 301});  // 154,112 bytes
    for (const std::vector<int64_t>& dims : shapes) {
      for (int types = 0; types < 4; ++types) {
        if (dims.size() == 3 && dims[0] == 2 && (types == 1 || types == 2)) continue;  // u8->u8, s8->s8 suffice
        Spec s;
        s.x_signed = types & 1;
        s.y_signed = types & 2;
        s.dims = dims;
        if (c.name == "Exp") s.x_scale = 0.01f;
        const std::string what = c.name + " " + ir::dims_to_string(dims) + " types " + std::to_string(types);
        SCOPED_TRACE(what);
        expect_cpu_lookup_matches_ref(build(s, c.body), dims.size() == 3 && dims[0] == 2 ? 4 : 1);
      }
    }
  }
}

// Constants of one value per channel (axis 1; activation equalization's Mul on a region's edge)
// make one 256-entry table per channel: Mul(x, [C,1,1]) -> HardSwish -> Add(., [1,C,1,1]).
Body per_channel_hardswish(int64_t channels, const std::string& scale_dims = "c11") {
  return [channels, scale_dims](OnnxBuilder& b, const std::string& x) {
    std::vector<float> k(static_cast<size_t>(channels)), bias(static_cast<size_t>(channels));
    for (int64_t c = 0; c < channels; ++c) {
      k[static_cast<size_t>(c)] = 0.25f + 0.6f * static_cast<float>(c);
      bias[static_cast<size_t>(c)] = -0.3f + 0.11f * static_cast<float>(c);
    }
    b.initializer("k",
                  scale_dims == "c11" ? std::vector<int64_t>{channels, 1, 1} : std::vector<int64_t>{1, 1, channels}, k);
    b.initializer("bias", {1, channels, 1, 1}, bias);
    b.node("Mul", {x, "k"}, {"m"}, "unscale");
    b.node("HardSwish", {"m"}, {"h"}, "hswish");
    b.node("Add", {"h", "bias"}, {"f"}, "shift");
    return std::string("f");
  };
}

TEST(FuseQdqLookup, PerChannelConstantsBitExact) {
  for (int types = 0; types < 4; ++types) {
    Spec s;
    s.x_signed = types & 1;
    s.y_signed = types & 2;
    s.y_scale = 0.03f;
    s.y_zp = 20;
    s.dims = {2, 5, 7, 37};
    auto g = check(s, per_channel_hardswish(5), true, "types " + std::to_string(types));
    ASSERT_NE(g, nullptr);
    for (const auto& n : g->nodes()) {
      if (n->op_type != "QLinearLookup") continue;
      EXPECT_EQ(n->input(1)->constant->dims(), (std::vector<int64_t>{5, 256}));
    }
  }
  // A constant along another axis is not per channel; one channel count per region.
  Spec s;
  s.dims = {2, 5, 7, 5};
  check(s, per_channel_hardswish(5, "11c"), false, "constant along the last axis");
}

// A [C, 256] table whose C is not X's axis 1, or a table of another shape, is refused at load
// with both shapes named.
TEST(FuseQdqLookup, PerChannelTableShapeChecked) {
  struct Bad {
    std::vector<int64_t> x, table;
  };
  for (const Bad& bad :
       {Bad{{1, 4, 5}, {3, 256}}, Bad{{4}, {4, 256}}, Bad{{1, 4, 5}, {4, 255}}, Bad{{1, 4}, {2, 2, 256}}}) {
    OnnxBuilder b(17);
    auto* op = b.model().add_opset_import();
    op->set_domain("nfuse");
    op->set_version(1);
    b.input("x_q", kU8, bad.x);
    int64_t n = 1;
    for (int64_t d : bad.table) n *= d;
    int_initializer(b, "table", kU8, bad.table, std::vector<int64_t>(static_cast<size_t>(n), 7));
    b.node("QLinearLookup", {"x_q", "table"}, {"y_q"}, "lookup").set_domain("nfuse");
    b.output("y_q", kU8, bad.x);
    const std::string bytes = b.bytes();
    auto g = frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".");
    ASSERT_FALSE(g.ok()) << ir::dims_to_string(bad.x) << " with table " << ir::dims_to_string(bad.table);
    EXPECT_NE(g.status().to_string().find("table"), std::string::npos) << g.status().to_string();
  }
}

// The cpu backend's per-channel lookup (each channel's plane on the x8-lut kernel, threaded
// above 128 KiB) against the unfused QDQ graph on ref.
TEST(FuseQdqLookup, PerChannelCpuSessionMatchesUnfusedRef) {
  for (const std::vector<int64_t>& dims : {std::vector<int64_t>{1, 3, 5, 61}, std::vector<int64_t>{2, 6, 101, 113}}) {
    for (int types : {0, 3}) {
      Spec s;
      s.x_signed = types & 1;
      s.y_signed = types & 2;
      s.y_scale = 0.03f;
      s.dims = dims;
      const std::string what = ir::dims_to_string(dims) + " types " + std::to_string(types);
      SCOPED_TRACE(what);
      expect_cpu_lookup_matches_ref(build(s, per_channel_hardswish(dims[1])), dims[0] == 2 ? 3 : 1);
    }
  }
}

}  // namespace
}  // namespace nfuse::passes_test

namespace nfuse::passes_test {
namespace {

// x_q -> com.microsoft QLinearSigmoid / QLinearLeakyRelu -> y_q, or the same as DQ -> op -> Q.
OnnxBuilder contrib(const std::string& op, bool x_signed, bool as_qdq, std::vector<int64_t> dims = {256}) {
  OnnxBuilder b(17);
  auto* imp = b.model().add_opset_import();
  imp->set_domain("com.microsoft");
  imp->set_version(1);
  const int t = x_signed ? kI8 : kU8;
  b.input("x_q", t, dims);
  b.initializer("x_scale", {}, {0.043f});
  int_initializer(b, "x_zp", t, {}, {x_signed ? -9 : 119});
  b.initializer("y_scale", {}, {op == "QLinearSigmoid" ? 1.0f / 256 : 0.039f});
  int_initializer(b, "y_zp", t, {}, {x_signed ? -128 : (op == "QLinearSigmoid" ? 0 : 100)});
  ::onnx::NodeProto* n = nullptr;
  if (as_qdq) {
    b.node("DequantizeLinear", {"x_q", "x_scale", "x_zp"}, {"x"}, "dq");
    n = &b.node(op == "QLinearSigmoid" ? "Sigmoid" : "LeakyRelu", {"x"}, {"f"}, "act");
    b.node("QuantizeLinear", {"f", "y_scale", "y_zp"}, {"y_q"}, "q");
  } else {
    n = &b.node(op, {"x_q", "x_scale", "x_zp", "y_scale", "y_zp"}, {"y_q"}, "act");
    n->set_domain("com.microsoft");
  }
  if (op == "QLinearLeakyRelu") set_float_attr(*n, "alpha", 0.15f);
  b.output("y_q", t, dims);
  return b;
}

TEST(FuseQdqLookup, ContribOpsBecomeLookupsBitExact) {
  for (const std::string op : {"QLinearSigmoid", "QLinearLeakyRelu"}) {
    for (bool x_signed : {false, true}) {
      SCOPED_TRACE(op + (x_signed ? " s8" : " u8"));
      auto contrib_graph = load(contrib(op, x_signed, false));
      auto fused = load(contrib(op, x_signed, false));
      auto qdq = load(contrib(op, x_signed, true));
      ASSERT_TRUE(contrib_graph && fused && qdq);
      PassLog log;
      ASSERT_TRUE(fuse_qdq_lookup(*fused, ref_evaluator(), log).ok());
      ASSERT_TRUE(fused->verify().ok());
      EXPECT_EQ(count_ops(*fused, "QLinearLookup"), 1);
      EXPECT_EQ(count_ops(*fused, op), 0);
      const std::vector<ir::Tensor> in = {all_codes(*qdq->inputs()[0])};
      auto a = backends::ref::interpret_graph(*contrib_graph, in);
      auto b = backends::ref::interpret_graph(*fused, in);
      auto c = backends::ref::interpret_graph(*qdq, in);
      ASSERT_TRUE(a.ok() && b.ok() && c.ok());
      // The contrib op's ref kernel is the QDQ graph's arithmetic, and the lookup reproduces it.
      EXPECT_TRUE(same_bytes((*c)[0], (*a)[0])) << "contrib ref kernel vs DQ -> op -> Q";
      EXPECT_TRUE(same_bytes((*a)[0], (*b)[0])) << "lookup vs contrib op";
      // On a cpu Session (default pipeline) too.
      runtime::SessionOptions opt;
      opt.backend = "cpu";
      auto s = runtime::Session::create(load(contrib(op, x_signed, false, {5, 1000})), opt);
      ASSERT_TRUE(s.ok()) << s.status().to_string();
      EXPECT_EQ(count_ops((*s)->graph(), "QLinearLookup"), 1);
      auto ref_graph = load(contrib(op, x_signed, false, {5, 1000}));
      const ir::Tensor codes = all_codes(*ref_graph->inputs()[0]);
      auto e = backends::ref::interpret_graph(*ref_graph, {codes});
      auto g = (*s)->run({{"x_q", codes}});
      ASSERT_TRUE(e.ok() && g.ok());
      EXPECT_TRUE(same_bytes((*e)[0], (*g)[0]));
    }
  }
}

}  // namespace
}  // namespace nfuse::passes_test

namespace nfuse::passes_test {
namespace {

// 16-bit regions (W8A16 models): the same chains over all 65536 codes give a [65536] table, the
// same bits as the unfused QDQ graph on ref; per-channel constants stay unfused there.
Spec wide_spec(int types) {
  Spec s;
  s.wide = true;
  s.x_signed = types & 1;
  s.y_signed = types & 2;
  s.x_scale = 0.0004f;
  s.x_zp = 30000;
  s.y_scale = 1.0f / 8192;
  s.y_zp = s.y_signed ? -300 : 9000;
  s.dims = {65536};
  return s;
}

TEST(FuseQdqLookup, SixteenBitRegionsBitExactOverAllCodes) {
  for (const Case& c : activations()) {
    if (c.name != "Sigmoid" && c.name != "SiLU" && c.name != "HardSwish as x * clip(x + 3, 0, 6) / 6" &&
        c.name != "Clip")
      continue;
    for (int types = 0; types < 4; ++types) {
      const Spec s = wide_spec(types);
      auto g = check(s, c.body, true, c.name + " 16-bit types " + std::to_string(types));
      ASSERT_NE(g, nullptr);
      const ir::Node* l = find_op(*g, "QLinearLookup");
      ASSERT_NE(l, nullptr);
      EXPECT_EQ(l->input(1)->constant->dims(), std::vector<int64_t>{65536});
      EXPECT_EQ(l->input(1)->constant->dtype(), s.y_signed ? ir::DType::kI16 : ir::DType::kU16);
    }
  }
}

// `g` on a cpu Session of `threads` threads: one nfuse.QLinearRegion, run on the cpu kernels (no
// node on ref), whose output x_q -> `expected` holds the same bytes.
void expect_cpu_region(std::unique_ptr<ir::Graph> g, int threads, const ir::Tensor& x, const ir::Tensor& expected) {
  ASSERT_TRUE(g);
  runtime::SessionOptions opt;
  opt.backend = "cpu";
  opt.threads = threads;
  auto cpu = runtime::Session::create(std::move(g), opt);
  ASSERT_TRUE(cpu.ok()) << cpu.status().to_string();
  EXPECT_EQ(count_ops((*cpu)->graph(), "QLinearRegion"), 1);
  backends::RunProfile profile;
  auto c = (*cpu)->run({{"x_q", x}}, &profile);
  ASSERT_TRUE(c.ok()) << c.status().to_string();
  EXPECT_TRUE(same_bytes(expected, (*c)[0]));
  ASSERT_FALSE(profile.nodes.empty());
  for (const auto& t : profile.nodes) EXPECT_FALSE(t.reference) << t.node->label() << " ran on ref";
}

// 16-bit regions with per-channel constants: no table (C x 128 KiB), nfuse.QLinearRegion instead,
// the same bits as the unfused QDQ graph on ref (every code in every channel) and, on a cpu
// Session (chunks of each plane, threaded), the same again. A region with an op the program
// does not run (Erf) stays unfused.
TEST(FuseQdqLookup, SixteenBitPerChannelRegionsBitExact) {
  // A written-out HardSwish between the per-channel rescalings, and a LeakyRelu / HardSigmoid /
  // Div chain reading x twice.
  const Body chain = [](OnnxBuilder& b, const std::string& x) {
    b.initializer("k", {1, 4, 1, 1}, {0.5f, 1.0f, 3.0f, 0.125f});
    b.initializer("three", {}, {3.0f});
    b.initializer("six", {}, {6.0f});
    b.initializer("zero", {}, {0.0f});
    b.node("Mul", {x, "k"}, {"m"}, "unscale");
    b.node("Add", {"m", "three"}, {"a"}, "plus3");
    b.node("Clip", {"a", "zero", "six"}, {"c"}, "clip");
    b.node("Mul", {"m", "c"}, {"p"}, "times");
    b.node("Div", {"p", "six"}, {"h"}, "div6");
    auto& l = b.node("LeakyRelu", {x}, {"l"}, "leaky");
    set_float_attr(l, "alpha", 0.2f);
    auto& hs = b.node("HardSigmoid", {"l"}, {"g"}, "hsig");
    set_float_attr(hs, "alpha", 0.3f);
    b.node("Sub", {"h", "g"}, {"f"}, "sub");
    return std::string("f");
  };
  // Every code in every channel; then planes that end in a partial chunk, with the cpu op's tasks
  // of several chunks straddling planes (2 x 4 planes of 20 chunks on 3 threads: tasks of 13 chunks).
  const std::vector<std::vector<int64_t>> shapes = {{1, 4, 256, 256}, {2, 4, 97, 101}};
  for (int types = 0; types < 4; ++types) {
    for (const auto& dims : shapes)
      for (const Body& body : {per_channel_hardswish(4), chain}) {
        Spec s = wide_spec(types);
        s.dims = dims;
        SCOPED_TRACE("types " + std::to_string(types) + ", " + std::to_string(dims[2]) + " rows");
        const OnnxBuilder b = build(s, body);
        auto before = load(b);
        auto after = load(b);
        ASSERT_TRUE(before && after);
        PassLog log;
        ASSERT_TRUE(fuse_qdq_lookup(*after, ref_evaluator(), log).ok());
        ASSERT_TRUE(after->verify().ok());
        EXPECT_EQ(count_ops(*after, "QLinearRegion"), 1);
        EXPECT_EQ(count_ops(*after, "QuantizeLinear") + count_ops(*after, "DequantizeLinear"), 0);
        const std::vector<ir::Tensor> in = {all_codes(*before->inputs()[0])};
        auto e = backends::ref::interpret_graph(*before, in);
        auto g = backends::ref::interpret_graph(*after, in);
        ASSERT_TRUE(e.ok() && g.ok()) << (g.ok() ? e.status().to_string() : g.status().to_string());
        EXPECT_TRUE(same_bytes((*e)[0], (*g)[0]));
        expect_cpu_region(load(b), 3, in[0], (*e)[0]);
      }
  }
  Spec s = wide_spec(0);
  s.dims = {1, 3, 4, 5};
  const Body erf = [](OnnxBuilder& b, const std::string& x) {
    b.initializer("k", {1, 3, 1, 1}, {0.5f, 1.0f, 3.0f});
    b.node("Mul", {x, "k"}, {"m"}, "unscale");
    b.node("Erf", {"m"}, {"f"}, "erf");
    return std::string("f");
  };
  auto g = load(build(s, erf));
  ASSERT_TRUE(g);
  PassLog log;
  ASSERT_TRUE(fuse_qdq_lookup(*g, ref_evaluator(), log).ok());
  EXPECT_EQ(count_ops(*g, "QLinearRegion"), 0);
  EXPECT_EQ(count_ops(*g, "Erf"), 1);
}

// Every op the schema lets a region name has a kernel step, and the schema refuses what the
// kernels could not run: an unknown op, an operand past the slots so far, a constant of the
// wrong length.
TEST(FuseQdqLookup, RegionOpsAndSchemaChecks) {
  for (const std::string& op : ops::qlinear_region_ops()) {
    kernels::RegionOp k;
    EXPECT_TRUE(kernels::region_op_from_name(op, &k)) << op;
  }
  struct Bad {
    std::vector<std::string> ops;
    std::vector<int64_t> operands;
    std::vector<int64_t> constant_dims;
    std::string needle;
  };
  for (const Bad& bad :
       {Bad{{"Erf"}, {0, 0}, {1}, "Erf"}, Bad{{"Add"}, {0, 2}, {1}, "operand 2"},
        Bad{{"Mul"}, {0, -1}, {5}, "one per channel"}, Bad{{"Neg", "Add"}, {0, 0}, {1}, "two operands"}}) {
    OnnxBuilder b(17);
    for (const char* domain : {"nfuse", "com.microsoft"}) {
      auto* op = b.model().add_opset_import();
      op->set_domain(domain);
      op->set_version(1);
    }
    b.input("x_q", kI16, {1, 4, 3});
    b.initializer("s", {}, {0.01f});
    int_initializer(b, "z", kI16, {}, {0});
    b.initializer("c", bad.constant_dims, std::vector<float>(static_cast<size_t>(bad.constant_dims[0]), 2.0f));
    auto& n = b.node("QLinearRegion", {"x_q", "s", "z", "s", "z", "c"}, {"y_q"}, "region");
    n.set_domain("nfuse");
    auto* ops_attr = n.add_attribute();
    ops_attr->set_name("ops");
    ops_attr->set_type(::onnx::AttributeProto::STRINGS);
    for (const auto& o : bad.ops) ops_attr->add_strings(o);
    set_ints_attr(n, "operands", bad.operands);
    auto* params = n.add_attribute();
    params->set_name("params");
    params->set_type(::onnx::AttributeProto::FLOATS);
    for (size_t i = 0; i < 2; ++i) params->add_floats(0.0f);
    b.output("y_q", kI16, {1, 4, 3});
    const std::string bytes = b.bytes();
    auto g = frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".");
    ASSERT_FALSE(g.ok()) << bad.needle;
    EXPECT_NE(g.status().to_string().find(bad.needle), std::string::npos) << g.status().to_string();
  }
}

TEST(FuseQdqLookup, SixteenBitTableIndexing) {
  // y = Neg(x) with identical scales: table[i] for s16 codes (index i = x + 32768) is
  // saturate(y_zp - (x - x_zp)).
  Spec s = wide_spec(3);
  s.x_scale = s.y_scale = 0.5f;
  auto g = check(s, unary("Neg"), true, "Neg s16");
  ASSERT_NE(g, nullptr);
  const ir::Tensor& t = *find_op(*g, "QLinearLookup")->input(1)->constant;
  for (int64_t i = 0; i < 65536; i += 97) {
    const int64_t x = i - 32768, x_zp = s.x_zp - 32768;
    EXPECT_EQ(t.get_int(i), std::clamp<int64_t>(s.y_zp - (x - x_zp), -32768, 32767)) << i;
  }
}

TEST(FuseQdqLookup, SixteenBitCpuSessionMatchesUnfusedRef) {
  for (const Case& c : activations()) {
    if (c.name != "Sigmoid" && c.name != "HardSwish as x * clip(x + 3, 0, 6) / 6") continue;
    for (int types = 0; types < 4; ++types) {
      for (const std::vector<int64_t>& dims : {std::vector<int64_t>{65536}, std::vector<int64_t>{2, 3, 131, 97}}) {
        Spec s = wide_spec(types);
        s.dims = dims;
        SCOPED_TRACE(c.name + " " + ir::dims_to_string(dims) + " types " + std::to_string(types));
        expect_cpu_lookup_matches_ref(build(s, c.body), dims.size() == 4 ? 3 : 1);
      }
    }
  }
}

// 16-bit X takes a [65536] table of a 16-bit type, nothing else; 8-bit X no 16-bit table.
TEST(FuseQdqLookup, SixteenBitTableShapeAndTypeChecked) {
  struct Bad {
    int x_type, table_type;
    std::vector<int64_t> table;
  };
  for (const Bad& bad :
       {Bad{kU16, kU16, {256}}, Bad{kI16, kI16, {2, 65536}}, Bad{kU16, kU8, {65536}}, Bad{kU8, kU16, {256}}}) {
    OnnxBuilder b(21);
    auto* op = b.model().add_opset_import();
    op->set_domain("nfuse");
    op->set_version(1);
    b.input("x_q", bad.x_type, {4});
    int64_t n = 1;
    for (int64_t d : bad.table) n *= d;
    int_initializer(b, "table", bad.table_type, bad.table, std::vector<int64_t>(static_cast<size_t>(n), 7));
    b.node("QLinearLookup", {"x_q", "table"}, {"y_q"}, "lookup").set_domain("nfuse");
    b.output("y_q", bad.table_type, {4});
    const std::string bytes = b.bytes();
    auto g = frontend::onnx::load_model_from_bytes(bytes.data(), bytes.size(), ".");
    ASSERT_FALSE(g.ok()) << bad.x_type << " with table " << ir::dims_to_string(bad.table);
  }
}

// A plain DQ -> Q requantization: between 8-bit tensors the QuantizeLinear alone as a 256-entry
// table; between widths (an int8 layer after an int16 one in a mixed-precision model, or the
// reverse) a QLinearRegion of one Identity step, on ref and on the cpu kernels; every code, the
// same bits as the unfused pair.
TEST(FuseQdqLookup, RequantizationsBitExact) {
  const Body none = [](OnnxBuilder&, const std::string& x) { return x; };
  Spec s;
  s.y_scale = 0.07f;
  s.y_zp = 100;
  check(s, none, true, "DQ8 -> Q8");
  for (const bool to_wide : {false, true}) {
    for (int types = 0; types < 4; ++types) {
      Spec w = wide_spec(types);
      w.dims = {2, 3, 128, 171};  // every 16-bit code
      if (!to_wide) {             // 16 -> 8: y is 8-bit
        w.y_scale = 0.05f;
        w.y_zp = w.y_signed ? -3 : 131;
      } else {  // 8 -> 16: x is 8-bit
        w.x_scale = 0.05f;
        w.x_zp = 128;
        w.dims = {3, 256};
      }
      OnnxBuilder b = build(w, none);
      // build() makes both ends one width: retype one end by rebuilding with the other width.
      Spec narrow = w;
      narrow.wide = false;
      OnnxBuilder nb = build(narrow, none);
      auto mixed = load(b);
      auto other = load(nb);
      ASSERT_TRUE(mixed && other);
      // Take x_q (8 -> 16) or y_q (16 -> 8) and its Q/DQ from the 8-bit graph.
      for (auto& n : mixed->nodes()) {
        const bool swap_x = to_wide && n->name == "dq", swap_y = !to_wide && n->name == "q";
        if (!swap_x && !swap_y) continue;
        for (auto& m : other->nodes()) {
          if (m->name != n->name) continue;
          n->domain = "";
          n->opset = 13;
          const int zp_input = 2;
          n->input(zp_input)->constant = m->input(zp_input)->constant;
          n->input(zp_input)->type = m->input(zp_input)->type;
          (swap_x ? n->input(0) : n->output(0))->type.dtype =
              swap_x ? m->input(0)->type.dtype : m->output(0)->type.dtype;
        }
      }
      mixed->relink();
      ASSERT_TRUE(ir::infer_shapes(*mixed).ok());
      ASSERT_TRUE(mixed->verify().ok());
      auto fused = ir::copy_graph(*mixed, false);
      ASSERT_TRUE(fused.ok());
      PassLog log;
      ASSERT_TRUE(fuse_qdq_lookup(**fused, ref_evaluator(), log).ok());
      SCOPED_TRACE(std::string(to_wide ? "8 -> 16" : "16 -> 8") + " types " + std::to_string(types));
      EXPECT_EQ(count_ops(**fused, "QLinearRegion"), 1);
      EXPECT_EQ(count_ops(**fused, "QuantizeLinear") + count_ops(**fused, "DequantizeLinear"), 0);
      const std::vector<ir::Tensor> in = {all_codes(*mixed->inputs()[0])};
      auto e = backends::ref::interpret_graph(*mixed, in);
      auto g = backends::ref::interpret_graph(**fused, in);
      ASSERT_TRUE(e.ok() && g.ok()) << (g.ok() ? e.status().to_string() : g.status().to_string());
      EXPECT_TRUE(same_bytes((*e)[0], (*g)[0]));
      auto cpu_graph = ir::copy_graph(*mixed, false);
      ASSERT_TRUE(cpu_graph.ok());
      expect_cpu_region(std::move(*cpu_graph), 2, in[0], (*e)[0]);
    }
  }
}

}  // namespace
}  // namespace nfuse::passes_test
