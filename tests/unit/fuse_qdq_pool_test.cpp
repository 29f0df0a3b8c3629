// fuse_qdq_pool: DQ -> GlobalAveragePool | AveragePool -> Q becomes com.microsoft
// QLinearGlobalAveragePool | QLinearAveragePool, DQ -> MaxPool -> Q with identical parameters a
// MaxPool on the quantized tensor; and the declines. MaxPool is exact (0 steps). The average
// pools differ from the QDQ graph by at most one step in few elements: ref's f32 AveragePool sums
// the dequantized values in double and rounds the mean to f32 before the QuantizeLinear divides
// by y_scale, the fused op sums integers exactly and rounds (acc * m) / count once in f32, so the
// two disagree only when the mean lies within rounding error of a .5 boundary.
#include "passes/fuse_qdq_pool.h"

#include "qdq_fusion_test_util.h"

namespace nfuse::passes_test {
namespace {

struct Spec {
  std::string op = "GlobalAveragePool";
  int x_elem = kU8, y_elem = kU8;
  float y_scale = 0.01f;
  int64_t y_zp_u8 = 120;
  bool scale_input = false;
  bool dilations = false;
  bool pool_output_is_graph_output = false;
  bool count_include_pad = false;
  bool per_axis = false;  // x's DequantizeLinear per channel
};

void check(const Spec& s, int expect_fused, const std::string& what) {
  OnnxBuilder b(17);
  const std::string x = quantized_input(b, "x", {2, 6, 9, 11}, s.x_elem, 0.02f, s.x_elem == kU8 ? 128 : 0, s.scale_input);
  if (s.per_axis) dequantize_per_axis(b, "x", 6, s.x_elem, 0.02f, s.x_elem == kU8 ? 128 : 0);
  auto& p = b.node(s.op, {x}, {"p"}, "pool");
  if (s.op != "GlobalAveragePool") {
    set_ints_attr(p, "kernel_shape", {3, 3});
    set_ints_attr(p, "strides", {2, 2});
    set_ints_attr(p, "pads", {1, 1, 1, 1});
    if (s.dilations) set_ints_attr(p, "dilations", {2, 2});
    if (s.count_include_pad) set_int_attr(p, "count_include_pad", 1);
  }
  quantized_output(b, "p", s.y_elem, s.y_scale, s.y_elem == kU8 ? s.y_zp_u8 : s.y_zp_u8 - 128);
  if (s.pool_output_is_graph_output) out(b, "p");
  const std::string fused = s.op == "MaxPool" ? "MaxPool" : "QLinear" + s.op;
  const int expect = s.op == "MaxPool" ? 1 : expect_fused;  // MaxPool stays a MaxPool either way
  const float step = s.op == "MaxPool" ? 0.0f : s.y_scale;
  check_fusion(b, fuse_qdq_pool, fused, expect, step, 2.0, what);
  if (s.op == "MaxPool") {  // fused: the MaxPool reads the quantized tensor and no DQ precedes it
    auto g = load(b);
    PassLog log;
    ASSERT_TRUE(fuse_qdq_pool(*g, log).ok());
    const ir::Node* mp = find_op(*g, "MaxPool");
    ASSERT_TRUE(mp);
    EXPECT_EQ(mp->input(0)->type.dtype == ir::DType::kF32, expect_fused == 0) << what;
  }
}

TEST(FuseQdqPool, Fuses) {
  check({}, 1, "GlobalAveragePool u8");
  check({.x_elem = kI8, .y_elem = kI8}, 1, "GlobalAveragePool s8");
  check({.op = "AveragePool"}, 1, "AveragePool u8");
  check({.op = "AveragePool", .x_elem = kI8, .y_elem = kI8, .count_include_pad = true}, 1, "AveragePool s8 incl pad");
  check({.op = "MaxPool", .y_scale = 0.02f, .y_zp_u8 = 128}, 1, "MaxPool, same parameters");
  check({.op = "MaxPool", .x_elem = kI8, .y_elem = kI8, .y_scale = 0.02f, .y_zp_u8 = 128}, 1, "MaxPool s8");
}

TEST(FuseQdqPool, Declines) {
  check({.y_elem = kI8}, 0, "GlobalAveragePool u8 -> s8");
  check({.scale_input = true}, 0, "non-constant scale");
  check({.pool_output_is_graph_output = true}, 0, "pool output is a graph output");
  check({.op = "AveragePool", .dilations = true}, 0, "AveragePool with dilations");
  check({.op = "MaxPool", .y_scale = 0.02f, .y_zp_u8 = 127}, 0, "MaxPool, different zero point");
  check({.op = "MaxPool"}, 0, "MaxPool, different scale");
  check({.per_axis = true}, 0, "GlobalAveragePool, per-axis input");
  check({.op = "MaxPool", .y_scale = 0.02f, .y_zp_u8 = 128, .per_axis = true}, 0, "MaxPool, per-axis input");
}

}  // namespace
}  // namespace nfuse::passes_test
