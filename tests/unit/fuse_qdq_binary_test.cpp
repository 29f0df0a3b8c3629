// fuse_qdq_binary: DQ -> Add | Mul -> Q becomes com.microsoft QLinearAdd | QLinearMul, and the
// declines (per-axis parameters, mismatched dtypes, non-constant scales, the op's output being a
// graph output or read twice). Fused and unfused graphs on ref differ by at most one step of the
// output quantization, in few elements: the QDQ graph rounds dequantized operands and their f32
// sum (product) before dividing by the output scale, the fused op multiplies by the precomputed
// scale ratios with one FMA (kernels/quant_arithmetic.h), so only values within f32 rounding error of a .5
// boundary can round the other way. The scales are "generic" (0.0213, 0.0147, 0.0311, as a
// calibrator produces): with round ratios such as 0.02 / 0.015 / 0.03 the exact result is
// (4a + 3b) / 6 and one value in six is an exact .5 tie, which either computation may round
// either way (both are within f32 rounding of it), and several percent of outputs differ.
// 16-bit chains (u16 / s16, Q/DQ of "com.microsoft" as ONNX Runtime writes them below opset 21;
// the importer takes opsets up to 17) fuse into nfuse's 16-bit form, which computes what the QDQ graph
// does: there fused and unfused agree bit for bit, and the cpu op runs them (not ref).
#include "passes/fuse_qdq_binary.h"

#include "qdq_fusion_test_util.h"

namespace nfuse::passes_test {
namespace {

struct Spec {
  std::string op = "Add";
  int a_elem = kU8, b_elem = kU8, y_elem = kU8;
  std::vector<int64_t> a_dims = {1, 8, 6, 7}, b_dims = {1, 8, 6, 7};
  bool per_axis_a = false;
  bool scale_input = false;
  bool op_output_is_graph_output = false;
  bool dq_read_twice = false;
  bool contrib_qdq = false;  // Q/DQ of "com.microsoft" (16-bit below opset 21)
};

constexpr int kU16 = ::onnx::TensorProto::UINT16;
constexpr int kI16 = ::onnx::TensorProto::INT16;

bool wide(int elem) { return elem == kU16 || elem == kI16; }

// The zero point for a u8 one of `u8_zp`, in elem's type (16-bit: the same place in its range).
int64_t zp_for(int elem, int64_t u8_zp) {
  if (wide(elem)) return elem == kU16 ? u8_zp * 256 + 77 : u8_zp * 256 + 77 - 32768;
  return elem == kU8 ? u8_zp : u8_zp - 128;
}

OnnxBuilder build(const Spec& s, float* y_scale) {
  OnnxBuilder b(17);
  const float k = wide(s.y_elem) ? 1.0f / 256 : 1.0f;  // 16-bit steps: the same range
  const std::string a = quantized_input(b, "a", s.a_dims, s.a_elem, 0.0213f * k, zp_for(s.a_elem, 128), s.scale_input);
  const std::string bb = quantized_input(b, "b", s.b_dims, s.b_elem, 0.0147f * k, zp_for(s.b_elem, 120));
  if (s.per_axis_a) {  // replace a's DQ parameters by per-channel ones on axis 1
    auto* g = b.model().mutable_graph();
    for (auto& n : *g->mutable_node()) {
      if (n.name() != "dq_a" && n.name() != "q_a") continue;
      n.set_input(1, "a_scale_c");
      n.set_input(2, "a_zp_c");
      set_int_attr(n, "axis", 1);
    }
    b.initializer("a_scale_c", {s.a_dims[1]}, std::vector<float>(static_cast<size_t>(s.a_dims[1]), 0.0213f));
    int_initializer(b, "a_zp_c", s.a_elem, {s.a_dims[1]}, std::vector<int64_t>(static_cast<size_t>(s.a_dims[1]), zp_for(s.a_elem, 128)));
  }
  b.node(s.op, {a, bb}, {"c"}, "op");
  *y_scale = (s.op == "Add" ? 0.0311f : 0.00041f) * k;
  quantized_output(b, "c", s.y_elem, *y_scale, zp_for(s.y_elem, s.op == "Add" ? 126 : 130));
  if (s.contrib_qdq) {  // 16-bit Q/DQ (every one when no tensor is 16-bit) in com.microsoft
    const bool any_wide = wide(s.a_elem) || wide(s.b_elem) || wide(s.y_elem);
    auto wide_node = [&](const std::string& name) {
      if (name == "q_a" || name == "dq_a") return wide(s.a_elem);
      if (name == "q_b" || name == "dq_b") return wide(s.b_elem);
      return wide(s.y_elem);  // q_z, dq_z
    };
    for (auto& n : *b.model().mutable_graph()->mutable_node()) {
      if ((n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear") && (!any_wide || wide_node(n.name())))
        n.set_domain("com.microsoft");
    }
    auto* contrib = b.model().add_opset_import();
    contrib->set_domain("com.microsoft");
    contrib->set_version(1);
  }
  if (s.op_output_is_graph_output) out(b, "c");
  if (s.dq_read_twice) {
    b.node("Sigmoid", {a}, {"side"}, "side");
    out(b, "side");
  }
  return b;
}

void check(const Spec& s, int expect_fused, const std::string& what) {
  float y_scale = 0;
  const OnnxBuilder b = build(s, &y_scale);
  if (wide(s.y_elem)) {  // bit-exact with the QDQ graph
    check_fusion(b, fuse_qdq_binary, "QLinear" + s.op, expect_fused, 0.0f, 0.0, what);
  } else {
    check_fusion(b, fuse_qdq_binary, "QLinear" + s.op, expect_fused, y_scale, 1.0, what);
  }
  if (expect_fused) expect_fused_runs_on_cpu(b, fuse_qdq_binary, what);
}

TEST(FuseQdqBinary, Fuses) {
  check({}, 1, "Add u8 same shape");
  check({.op = "Mul"}, 1, "Mul u8 same shape");
  check({.a_elem = kI8, .b_elem = kI8, .y_elem = kI8}, 1, "Add s8");
  check({.op = "Mul", .a_elem = kI8, .b_elem = kI8, .y_elem = kI8}, 1, "Mul s8");
  check({.b_dims = {1, 8, 1, 1}}, 1, "Add per-channel broadcast");
  check({.op = "Mul", .a_dims = {7}, .b_dims = {2, 3, 7}}, 1, "Mul row broadcast");
}

TEST(FuseQdqBinary, SixteenBitFusesBitExact) {
  check({.a_elem = kU16, .b_elem = kU16, .y_elem = kU16, .contrib_qdq = true}, 1, "Add u16, com.microsoft Q/DQ");
  check({.op = "Mul", .a_elem = kI16, .b_elem = kI16, .y_elem = kI16, .contrib_qdq = true}, 1,
        "Mul s16, com.microsoft Q/DQ");
  check({.a_elem = kI16, .b_elem = kI16, .y_elem = kI16, .contrib_qdq = true}, 1, "Add s16");
  check({.op = "Mul", .a_elem = kU16, .b_elem = kU16, .y_elem = kU16, .b_dims = {1, 8, 1, 1}, .contrib_qdq = true}, 1,
        "Mul u16, per-channel broadcast (squeeze-excitation)");
  check({.a_elem = kU16,
         .b_elem = kU16,
         .y_elem = kU16,
         .a_dims = {1, 1, 6, 7},
         .b_dims = {1, 8, 6, 7},
         .contrib_qdq = true},
        1, "Add u16, first operand broadcast");
}

TEST(FuseQdqBinary, SixteenBitDeclines) {
  check({.a_elem = kU16, .b_elem = kI16, .y_elem = kU16, .contrib_qdq = true}, 0, "a u16, b s16");
  // u16 operands (com.microsoft DQ) into an u8 output (default-domain Q): widths differ.
  check({.a_elem = kU16, .b_elem = kU16, .y_elem = kU8, .contrib_qdq = true}, 0, "u16 inputs, u8 output");
  check({.contrib_qdq = true}, 0, "8-bit Q/DQ of com.microsoft (ORT's 8-bit op takes the default domain only)");
}

TEST(FuseQdqBinary, KeepsSharedDequantize) {
  float y_scale = 0;
  const OnnxBuilder b = build({.dq_read_twice = true}, &y_scale);
  check_fusion(b, fuse_qdq_binary, "QLinearAdd", 1, y_scale, 1.0, "DQ with a second reader");
  auto g = load(b);
  PassLog log;
  ASSERT_TRUE(fuse_qdq_binary(*g, log).ok());
  EXPECT_EQ(count_ops(*g, "DequantizeLinear"), 2);  // a's (kept for Sigmoid) and z's
}

TEST(FuseQdqBinary, Declines) {
  check({.per_axis_a = true}, 0, "per-axis a");
  check({.a_elem = kI8}, 0, "a s8, b and y u8");
  check({.y_elem = kI8}, 0, "y s8, inputs u8");
  check({.scale_input = true}, 0, "a_scale a graph input");
  check({.op_output_is_graph_output = true}, 0, "Add output is a graph output");
}

}  // namespace
}  // namespace nfuse::passes_test
