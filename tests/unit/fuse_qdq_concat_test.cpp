// fuse_qdq_concat: DQ... -> Concat -> Q becomes com.microsoft QLinearConcat, and its declines.
// QLinearConcat is defined as quantize(dequantize(x)) per element, exactly what the QDQ graph
// computes, so fused and unfused agree bit for bit (0 steps). 16-bit tensors (u16 / s16 with
// "com.microsoft" Q/DQ, as W8A16 graphs hold them) fuse too, and run on the cpu kernels.
#include "passes/fuse_qdq_concat.h"

#include "qdq_fusion_test_util.h"
#include "runtime/session.h"

namespace nfuse::passes_test {
namespace {

struct Spec {
  int elem = kU8, second_elem = kU8;
  int64_t axis = 1;
  bool scale_input = false;
  bool per_axis = false;
  bool concat_output_is_graph_output = false;
  int opset = 17;
  int64_t h = 5, w = 6;
};

constexpr int kU16 = ::onnx::TensorProto::UINT16;
constexpr int kI16 = ::onnx::TensorProto::INT16;

int64_t zero_point(int elem) { return elem == kU8 ? 128 : elem == kU16 ? 32768 : 0; }
int64_t second_zero_point(int elem) { return elem == kU8 ? 100 : elem == kU16 ? 30000 : elem == kI16 ? -300 : -28; }

void check(const Spec& s, int expect_fused, const std::string& what) {
  OnnxBuilder b(s.opset);
  const int64_t zp = zero_point(s.elem);
  const bool wide = s.elem == kU16 || s.elem == kI16;
  const float step = wide ? 0.0001f : 1.0f;  // 16-bit steps: the inputs' range still fits
  const std::string x0 = quantized_input(b, "x0", {1, 4, s.h, s.w}, s.elem, 0.02f * step, zp);
  const std::string x1 = quantized_input(b, "x1", {1, 3, s.h, s.w}, s.second_elem, 0.01f * step,
                                         second_zero_point(s.second_elem), s.scale_input);
  const std::string x2 = quantized_input(b, "x2", {1, 4, s.h, s.w}, s.elem, 0.015f * step, zp);
  if (s.per_axis) {
    auto* g = b.model().mutable_graph();
    for (auto& n : *g->mutable_node()) {
      if (n.name() != "dq_x2") continue;
      n.set_input(1, "s_c");
      set_int_attr(n, "axis", 1);
      n.set_input(2, "z_c");
    }
    b.initializer("s_c", {4}, {0.015f, 0.015f, 0.015f, 0.015f});
    int_initializer(b, "z_c", s.elem, {4}, {zp, zp, zp, zp});
  }
  auto& c = b.node("Concat", {x0, x1, x2}, {"c"}, "concat");
  set_int_attr(c, "axis", s.axis);
  quantized_output(b, "c", s.elem, 0.02f * step, zp);
  if (s.concat_output_is_graph_output) out(b, "c");
  if (wide) {  // 16-bit Q/DQ as ONNX Runtime writes them below opset 21
    for (auto& n : *b.model().mutable_graph()->mutable_node()) {
      if (n.op_type() == "QuantizeLinear" || n.op_type() == "DequantizeLinear") n.set_domain("com.microsoft");
    }
    auto* contrib = b.model().add_opset_import();
    contrib->set_domain("com.microsoft");
    contrib->set_version(1);
  }
  check_fusion(b, fuse_qdq_concat, "QLinearConcat", expect_fused, 0.0f, 0.0, what);
  // The fused op runs on the cpu kernels (copies for x0, requantization for x1 and x2).
  if (expect_fused) expect_fused_runs_on_cpu(b, fuse_qdq_concat, what, 2);
}

TEST(FuseQdqConcat, Fuses) {
  check({}, 1, "u8 axis 1");
  check({.elem = kI8, .second_elem = kI8}, 1, "s8 axis 1");
  check({.axis = -3}, 1, "u8 axis -3");
  check({.elem = kU16, .second_elem = kU16}, 1, "u16 axis 1");
  check({.elem = kI16, .second_elem = kI16, .axis = -3}, 1, "s16 axis -3");
  check({.elem = kI16, .second_elem = kI16, .h = 50, .w = 60}, 1, "s16, rows of several chunks");
}

TEST(FuseQdqConcat, Declines) {
  check({.second_elem = kI8}, 0, "one input s8");
  check({.elem = kI16, .second_elem = kU16}, 0, "one input u16 among s16");
  check({.scale_input = true}, 0, "non-constant scale");
  check({.per_axis = true}, 0, "per-axis input");
  check({.concat_output_is_graph_output = true}, 0, "Concat output is a graph output");
}

}  // namespace
}  // namespace nfuse::passes_test
