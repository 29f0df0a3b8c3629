// fuse_qdq_concat: DQ... -> Concat -> Q becomes com.microsoft QLinearConcat, and its declines.
// QLinearConcat is defined as quantize(dequantize(x)) per element, exactly what the QDQ graph
// computes, so fused and unfused agree bit for bit (0 steps).
#include "passes/fuse_qdq_concat.h"

#include "qdq_fusion_test_util.h"

namespace nfuse::passes_test {
namespace {

struct Spec {
  int elem = kU8, second_elem = kU8;
  int64_t axis = 1;
  bool scale_input = false;
  bool per_axis = false;
  bool concat_output_is_graph_output = false;
  int opset = 17;
};

void check(const Spec& s, int expect_fused, const std::string& what) {
  OnnxBuilder b(s.opset);
  const int64_t zp = s.elem == kU8 ? 128 : 0;
  const std::string x0 = quantized_input(b, "x0", {1, 4, 5, 6}, s.elem, 0.02f, zp);
  const std::string x1 = quantized_input(b, "x1", {1, 3, 5, 6}, s.second_elem, 0.01f,
                                         s.second_elem == kU8 ? 100 : -28, s.scale_input);
  const std::string x2 = quantized_input(b, "x2", {1, 4, 5, 6}, s.elem, 0.015f, zp);
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
  quantized_output(b, "c", s.elem, 0.02f, zp);
  if (s.concat_output_is_graph_output) out(b, "c");
  check_fusion(b, fuse_qdq_concat, "QLinearConcat", expect_fused, 0.0f, 0.0, what);
}

TEST(FuseQdqConcat, Fuses) {
  check({}, 1, "u8 axis 1");
  check({.elem = kI8, .second_elem = kI8}, 1, "s8 axis 1");
  check({.axis = -3}, 1, "u8 axis -3");
}

TEST(FuseQdqConcat, Declines) {
  check({.second_elem = kI8}, 0, "one input s8");
  check({.scale_input = true}, 0, "non-constant scale");
  check({.per_axis = true}, 0, "per-axis input");
  check({.concat_output_is_graph_output = true}, 0, "Concat output is a graph output");
}

}  // namespace
}  // namespace nfuse::passes_test
