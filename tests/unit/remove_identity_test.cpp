#include "passes/remove_identity.h"

#include "pass_test_util.h"

namespace nfuse::passes_test {
namespace {

TEST(RemoveIdentity, RemovesIdentityAndDropoutChains) {
  OnnxBuilder b;
  b.input("x", kF, {2, 3});
  b.node("Relu", {"x"}, {"a"}, "relu");
  b.node("Identity", {"a"}, {"b"}, "id1");
  b.node("Dropout", {"b"}, {"c"}, "drop");
  b.node("Identity", {"c"}, {"d"}, "id2");
  b.node("Sigmoid", {"d"}, {"z"}, "sig");
  out(b, "z");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, remove_identity, "chain", &after);
  ASSERT_TRUE(after);
  EXPECT_EQ(lines.size(), 3u);
  ASSERT_EQ(after->nodes().size(), 2u);
  EXPECT_EQ(after->nodes()[1]->input(0)->name, "a");
}

TEST(RemoveIdentity, GraphOutputKeepsItsName) {
  OnnxBuilder b;
  b.input("x", kF, {2, 3});
  b.node("Relu", {"x"}, {"a"}, "relu");
  b.node("Identity", {"a"}, {"out"}, "id");
  b.node("Sigmoid", {"a"}, {"s"}, "sig");  // another reader of the renamed value
  out(b, "out");
  out(b, "s");
  std::unique_ptr<ir::Graph> after;
  auto lines = check_pass(b, remove_identity, "output_rename", &after);
  ASSERT_TRUE(after);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0], "removed Identity 'id': Relu 'relu' now writes graph output 'out' (was 'a')");
  ASSERT_EQ(after->outputs().size(), 2u);
  EXPECT_EQ(after->outputs()[0]->name, "out");
  EXPECT_EQ(after->outputs()[0]->producer->name, "relu");
  EXPECT_EQ(find_op(*after, "Sigmoid")->input(0)->name, "out");
  check_pass(b, remove_identity, "output_rename");
}

TEST(RemoveIdentity, KeepsWhatMustStay) {
  OnnxBuilder b(13);
  b.input("x", kF, {2, 3});
  b.node("Identity", {"x"}, {"passthrough"}, "id_in");        // graph input -> graph output
  b.node("Relu", {"x"}, {"a"}, "relu");
  b.node("Identity", {"a"}, {"a2"}, "id_out_out");            // graph output -> graph output
  b.node("Dropout", {"a"}, {"d", "mask"}, "drop_mask_used");   // the mask is read: stays
  b.node("Cast", {"mask"}, {"mask_f"}, "cast");
  set_int_attr(b.model().mutable_graph()->mutable_node(4)[0], "to", ::onnx::TensorProto::FLOAT);
  out(b, "passthrough");
  out(b, "a");
  out(b, "a2");
  out(b, "d");
  out(b, "mask_f");
  auto g = load(b);
  ASSERT_TRUE(g);
  PassLog log;
  ASSERT_TRUE(remove_identity(*g, log).ok());
  EXPECT_TRUE(log.empty());
  EXPECT_EQ(g->nodes().size(), 5u);
  EXPECT_TRUE(g->verify().ok());
}

}  // namespace
}  // namespace nfuse::passes_test
