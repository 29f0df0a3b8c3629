// Bad input gets a clear error naming what and where — never a crash or a silent wrong answer.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "frontend/onnx/onnx_importer.h"
#include "runtime/session.h"
#include "support/onnx_builder.h"

namespace nfuse {
namespace {

using frontend::onnx::load_model;
using frontend::onnx::load_model_from_bytes;
using testing::OnnxBuilder;
constexpr int kF32 = ::onnx::TensorProto::FLOAT;

Result<std::unique_ptr<ir::Graph>> import(const std::string& bytes) {
  return load_model_from_bytes(bytes.data(), bytes.size(), "");
}

void expect_error(const Status& s, StatusCode code, std::initializer_list<const char*> fragments) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const char* f : fragments) EXPECT_NE(s.message().find(f), std::string::npos) << "'" << f << "' not in: " << s.message();
}

// x[1,2,4,4] -> Conv(3x3, 3 filters, pad 1) -> Relu -> y
OnnxBuilder small_cnn() {
  OnnxBuilder b;
  b.input("x", kF32, {1, 2, 4, 4}).output("y", kF32, {1, 3, 4, 4});
  b.initializer("w", {3, 2, 3, 3}, std::vector<float>(54, 0.1f));
  auto& conv = b.node("Conv", {"x", "w"}, {"c"}, "conv1");
  testing::set_ints_attr(conv, "pads", {1, 1, 1, 1});
  b.node("Relu", {"c"}, {"y"}, "relu1");
  return b;
}

TEST(BadInput, ValidModelLoadsAndRuns) {
  auto g = import(small_cnn().bytes());
  ASSERT_TRUE(g.ok()) << g.status().to_string();
  auto session = runtime::Session::create(std::move(g).value(), {});
  ASSERT_TRUE(session.ok());
  ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, {1, 2, 4, 4});
  for (int64_t i = 0; i < x.numel(); ++i) x.data<float>()[i] = 1.0f;
  auto out = (*session)->run({{"x", x}});
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  // Centre pixel sees all 2*3*3 taps of 0.1: 1.8; a corner sees 2*2*2: 0.8.
  EXPECT_NEAR((*out)[0].data<float>()[5], 1.8f, 1e-5);
  EXPECT_NEAR((*out)[0].data<float>()[0], 0.8f, 1e-5);
}

TEST(BadInput, TruncatedFile) {
  const std::string bytes = small_cnn().bytes();
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{7}}) {
    auto g = import(bytes.substr(0, cut));
    ASSERT_FALSE(g.ok()) << "cut at " << cut;
    EXPECT_EQ(g.status().code(), StatusCode::kInvalidModel) << g.status().to_string();
  }
}

TEST(BadInput, NotAnOnnxFile) {
  expect_error(import("\x89PNG\r\n\x1a\n this is an image, not a model").status(), StatusCode::kInvalidModel,
               {"not a valid ONNX model"});
  expect_error(import("").status(), StatusCode::kInvalidModel, {"not a valid ONNX model"});
}

TEST(BadInput, MissingFile) {
  expect_error(load_model("/nonexistent/model.onnx").status(), StatusCode::kNotFound, {"/nonexistent/model.onnx"});
}

TEST(BadInput, GraphWithCycle) {
  OnnxBuilder b;
  b.input("x", kF32, {2}).output("y", kF32, {2});
  b.node("Add", {"x", "b"}, {"a"}, "add_a");
  b.node("Relu", {"a"}, {"b"}, "relu_b");
  b.node("Identity", {"b"}, {"y"}, "out");
  // Node order does not matter for the error: either the use-before-definition or the cycle is named.
  auto s = import(b.bytes()).status();
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), StatusCode::kInvalidModel) << s.to_string();
  EXPECT_TRUE(s.message().find("cycle") != std::string::npos || s.message().find("'b'") != std::string::npos)
      << s.message();
}

TEST(BadInput, CycleDetectedEvenWhenAllNamesExist) {
  ir::Graph g;
  g.name = "g";
  ir::Value* x = g.add_value("x", {ir::DType::kF32, ir::Shape::from_dims({2})}).value();
  ir::Value* a = g.add_value("a").value();
  ir::Value* b = g.add_value("b").value();
  g.inputs().push_back(x);
  g.add_node("Add", "add_a", {x, b}, {a});
  g.add_node("Relu", "relu_b", {a}, {b});
  expect_error(g.topo_sort(), StatusCode::kInvalidModel, {"cycle"});
}

TEST(BadInput, MissingInitializer) {
  OnnxBuilder b;
  b.input("x", kF32, {1, 2, 4, 4}).output("y", kF32, {1, 3, 4, 4});
  b.node("Conv", {"x", "weights_that_do_not_exist"}, {"y"}, "conv1");
  expect_error(import(b.bytes()).status(), StatusCode::kInvalidModel,
               {"conv1", "Conv", "weights_that_do_not_exist", "not a graph input, initializer"});
}

TEST(BadInput, UnknownOp) {
  OnnxBuilder b(13);
  b.input("x", kF32, {2}).output("y", kF32, {2});
  b.node("FrobnicateTensor", {"x"}, {"y"}, "mystery");
  expect_error(import(b.bytes()).status(), StatusCode::kUnsupported,
               {"mystery", "FrobnicateTensor", "opset 13", "not supported"});
}

TEST(BadInput, UnsupportedOpsetAndDomain) {
  OnnxBuilder b(18);
  b.input("x", kF32, {2}).output("y", kF32, {2});
  b.node("Relu", {"x"}, {"y"});
  expect_error(import(b.bytes()).status(), StatusCode::kUnsupported, {"opset 18"});
  OnnxBuilder c(13);
  c.input("x", kF32, {2}).output("y", kF32, {2});
  c.node("Relu", {"x"}, {"y"}).set_domain("com.example");
  expect_error(import(c.bytes()).status(), StatusCode::kUnsupported, {"com.example"});
}

TEST(BadInput, MismatchedShapes) {
  OnnxBuilder b;
  b.input("x", kF32, {2, 3}).input("z", kF32, {4, 5}).output("y", kF32, {2, 3});
  b.node("Add", {"x", "z"}, {"y"}, "add_bad");
  expect_error(import(b.bytes()).status(), StatusCode::kInvalidModel, {"add_bad", "broadcast"});
}

TEST(BadInput, DeclaredShapeContradictsInference) {
  OnnxBuilder b;
  b.input("x", kF32, {2, 3}).output("y", kF32, {7, 3});
  b.node("Relu", {"x"}, {"y"}, "relu_decl");
  expect_error(import(b.bytes()).status(), StatusCode::kInvalidModel, {"relu_decl", "'y'", "declared"});
}

TEST(BadInput, WrongInputDtypeAndShapeAtRun) {
  auto g = import(small_cnn().bytes());
  ASSERT_TRUE(g.ok());
  auto session = runtime::Session::create(std::move(g).value(), {});
  ASSERT_TRUE(session.ok());
  expect_error((*session)->run({{"x", ir::Tensor::allocate(ir::DType::kF16, {1, 2, 4, 4})}}).status(),
               StatusCode::kInvalidArgument, {"'x'", "must be f32", "f16"});
  expect_error((*session)->run({{"x", ir::Tensor::allocate(ir::DType::kF32, {1, 2, 5, 4})}}).status(),
               StatusCode::kInvalidArgument, {"'x'", "[1,2,4,4]", "1x2x5x4"});
  expect_error((*session)->run({{"x", ir::Tensor::allocate(ir::DType::kF32, {2, 4, 4})}}).status(),
               StatusCode::kInvalidArgument, {"'x'", "must have shape"});
}

TEST(BadInput, HostileTensorDims) {
  OnnxBuilder b;
  b.input("x", kF32, {2}).output("y", kF32, {2});
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name("huge");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(int64_t{1} << 40);
  t->add_dims(int64_t{1} << 30);
  b.node("Add", {"x", "huge"}, {"y"});
  expect_error(import(b.bytes()).status(), StatusCode::kInvalidModel, {"huge"});
  OnnxBuilder c;
  c.input("x", kF32, {2}).output("y", kF32, {2});
  auto* r = c.model().mutable_graph()->add_initializer();
  r->set_name("short_raw");
  r->set_data_type(::onnx::TensorProto::FLOAT);
  r->add_dims(1000);
  r->set_raw_data(std::string(12, '\0'));
  c.node("Add", {"x", "short_raw"}, {"y"});
  expect_error(import(c.bytes()).status(), StatusCode::kInvalidModel, {"short_raw", "raw_data"});
}

TEST(BadInput, ExternalDataMustStayInsideModelFolder) {
  OnnxBuilder b;
  b.input("x", kF32, {2}).output("y", kF32, {2});
  auto* t = b.model().mutable_graph()->add_initializer();
  t->set_name("ext");
  t->set_data_type(::onnx::TensorProto::FLOAT);
  t->add_dims(2);
  t->set_data_location(::onnx::TensorProto::EXTERNAL);
  auto* kv = t->add_external_data();
  kv->set_key("location");
  kv->set_value("../../etc/passwd");
  b.node("Add", {"x", "ext"}, {"y"});
  expect_error(import(b.bytes()).status(), StatusCode::kInvalidModel, {"ext", "inside the model folder"});
}

TEST(BadInput, ExternalDataLoadsAndIsBoundsChecked) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("nfuse_ext_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const float weights[2] = {10.0f, 20.0f};
  {
    std::ofstream f(dir / "weights.bin", std::ios::binary);
    f.write("PAD!", 4);
    f.write(reinterpret_cast<const char*>(weights), sizeof weights);
  }
  auto make = [&](const std::string& offset) {
    OnnxBuilder b;
    b.input("x", kF32, {2}).output("y", kF32, {2});
    auto* t = b.model().mutable_graph()->add_initializer();
    t->set_name("ext");
    t->set_data_type(::onnx::TensorProto::FLOAT);
    t->add_dims(2);
    t->set_data_location(::onnx::TensorProto::EXTERNAL);
    for (auto [k, v] : {std::pair<std::string, std::string>{"location", "weights.bin"}, {"offset", offset}}) {
      auto* kv = t->add_external_data();
      kv->set_key(k);
      kv->set_value(v);
    }
    b.node("Add", {"x", "ext"}, {"y"});
    std::ofstream(dir / "model.onnx", std::ios::binary) << b.bytes();
    return load_model((dir / "model.onnx").string());
  };
  auto good = make("4");
  ASSERT_TRUE(good.ok()) << good.status().to_string();
  const ir::Value* ext = (*good)->find_value("ext");
  ASSERT_TRUE(ext && ext->constant);
  EXPECT_EQ(ext->constant->data<float>()[1], 20.0f);
  expect_error(make("8").status(), StatusCode::kInvalidModel, {"ext", "does not fit"});
  fs::remove_all(dir);
}

}  // namespace
}  // namespace nfuse
