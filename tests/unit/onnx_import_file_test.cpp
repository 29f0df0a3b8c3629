// load_model parses straight from the file and frees each tensor's proto payload once converted:
// the result must match load_model_from_bytes, and bad files must still get clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "frontend/onnx/onnx_importer.h"
#include "frontend/onnx/onnx_tensor.h"
#include "runtime/session.h"
#include "support/onnx_builder.h"

namespace nfuse {
namespace {

namespace fs = std::filesystem;
using frontend::onnx::load_model;
using frontend::onnx::load_model_from_bytes;
using testing::OnnxBuilder;
constexpr int kF32 = ::onnx::TensorProto::FLOAT;
constexpr int kBool = ::onnx::TensorProto::BOOL;

class OnnxImportFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("nfuse_import_file_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& bytes) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p.string();
  }
  fs::path dir_;
};

void set_raw_floats(::onnx::TensorProto* t, const std::string& name, std::vector<int64_t> dims,
                    const std::vector<float>& values) {
  t->set_name(name);
  t->set_data_type(kF32);
  for (int64_t d : dims) t->add_dims(d);
  t->set_raw_data(values.data(), values.size() * sizeof(float));
}

// y = If(cond, then: x + w + c_then, else: x * w) where w is a raw_data initializer of the outer
// graph, c_then a Constant node (float_data) inside the then-branch and `bias` a Constant node
// with raw_data in the outer graph: every place the importer reads tensors from.
OnnxBuilder model_with_all_tensor_kinds() {
  OnnxBuilder b;
  b.input("x", kF32, {4}).input("cond", kBool, {}).output("y", kF32, {4});
  set_raw_floats(b.model().mutable_graph()->add_initializer(), "w", {4}, {1, 2, 3, 4});
  auto& bias = b.node("Constant", {}, {"bias"}, "bias_const");
  auto* ba = bias.add_attribute();
  ba->set_name("value");
  ba->set_type(::onnx::AttributeProto::TENSOR);
  set_raw_floats(ba->mutable_t(), "bias_t", {4}, {100, 200, 300, 400});
  b.node("Add", {"x", "bias"}, {"xb"}, "add_bias");

  auto& iff = b.node("If", {"cond"}, {"y"}, "if");
  auto branch = [](const std::string& name, bool then_branch) {
    ::onnx::GraphProto g;
    g.set_name(name);
    if (then_branch) {
      auto* c = g.add_node();
      c->set_op_type("Constant");
      c->set_name("c_then_const");
      c->add_output("c_then");
      auto* a = c->add_attribute();
      a->set_name("value");
      a->set_type(::onnx::AttributeProto::TENSOR);
      auto* t = a->mutable_t();
      t->set_name("c_then_t");
      t->set_data_type(kF32);
      t->add_dims(4);
      for (float v : {10.0f, 20.0f, 30.0f, 40.0f}) t->add_float_data(v);
      auto* add1 = g.add_node();
      add1->set_op_type("Add");
      add1->add_input("xb");
      add1->add_input("w");
      add1->add_output("s");
      auto* add2 = g.add_node();
      add2->set_op_type("Add");
      add2->add_input("s");
      add2->add_input("c_then");
      add2->add_output(name + "_out");
    } else {
      auto* mul = g.add_node();
      mul->set_op_type("Mul");
      mul->add_input("xb");
      mul->add_input("w");
      mul->add_output(name + "_out");
    }
    auto* out = g.add_output();
    out->set_name(name + "_out");
    auto* tt = out->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(kF32);
    tt->mutable_shape()->add_dim()->set_dim_value(4);
    return g;
  };
  for (bool then_branch : {true, false}) {
    auto* a = iff.add_attribute();
    a->set_name(then_branch ? "then_branch" : "else_branch");
    a->set_type(::onnx::AttributeProto::GRAPH);
    *a->mutable_g() = branch(then_branch ? "then" : "else", then_branch);
  }
  return b;
}

std::vector<float> run(std::unique_ptr<ir::Graph> g, bool cond) {
  auto session = runtime::Session::create(std::move(g), {});
  EXPECT_TRUE(session.ok()) << session.status().to_string();
  if (!session.ok()) return {};
  ir::Tensor x = ir::Tensor::from_vector<float>({0.5f, 1.5f, 2.5f, 3.5f}, {4});
  ir::Tensor c = ir::Tensor::allocate(ir::DType::kBool, {});
  c.data<bool>()[0] = cond;
  auto out = (*session)->run({{"x", x}, {"cond", c}});
  EXPECT_TRUE(out.ok()) << out.status().to_string();
  if (!out.ok()) return {};
  const ir::Tensor& y = (*out)[0];
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

TEST_F(OnnxImportFile, FileAndBytesImportTheSameTensors) {
  const std::string bytes = model_with_all_tensor_kinds().bytes();
  const std::string path = write("model.onnx", bytes);
  for (bool cond : {true, false}) {
    auto from_file = load_model(path);
    ASSERT_TRUE(from_file.ok()) << from_file.status().to_string();
    auto from_bytes = load_model_from_bytes(bytes.data(), bytes.size(), "");
    ASSERT_TRUE(from_bytes.ok()) << from_bytes.status().to_string();
    const ir::Value* w = (*from_file)->find_value("w");
    ASSERT_TRUE(w && w->constant);
    EXPECT_EQ(w->constant->data<float>()[3], 4.0f);
    const std::vector<float> a = run(std::move(from_file).value(), cond);
    const std::vector<float> b = run(std::move(from_bytes).value(), cond);
    EXPECT_EQ(a, b);
    const std::vector<float> expect =
        cond ? std::vector<float>{111.5f, 223.5f, 335.5f, 447.5f}
             : std::vector<float>{100.5f * 1, 201.5f * 2, 302.5f * 3, 403.5f * 4};
    EXPECT_EQ(a, expect);
  }
}

void expect_error(const Status& s, StatusCode code, std::initializer_list<std::string> fragments) {
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), code) << s.to_string();
  for (const auto& f : fragments) EXPECT_NE(s.message().find(f), std::string::npos) << "'" << f << "' not in: " << s.message();
}

TEST_F(OnnxImportFile, EmptyTruncatedAndForeignFilesAreInvalidModels) {
  const std::string bytes = model_with_all_tensor_kinds().bytes();
  const std::string empty = write("empty.onnx", "");
  expect_error(load_model(empty).status(), StatusCode::kInvalidModel, {"not a valid ONNX model", empty});
  for (size_t cut : {bytes.size() / 2, bytes.size() - 3, size_t{7}}) {
    const std::string p = write("cut.onnx", bytes.substr(0, cut));
    expect_error(load_model(p).status(), StatusCode::kInvalidModel, {p});
  }
  const std::string png = write("image.onnx", "\x89PNG\r\n\x1a\n this is an image, not a model");
  expect_error(load_model(png).status(), StatusCode::kInvalidModel, {"not a valid ONNX model", png});
  // A directory is not a model: a clear error (reading it used to throw out of load_model).
  expect_error(load_model(dir_.string()).status(), StatusCode::kNotFound, {"directory", dir_.string()});
  expect_error(load_model((dir_ / "missing.onnx").string()).status(), StatusCode::kNotFound, {"missing.onnx"});
}

TEST_F(OnnxImportFile, CorruptTensorSizesStillRejected) {
  OnnxBuilder b;
  b.input("x", kF32, {4}).output("y", kF32, {4});
  auto* t = b.model().mutable_graph()->add_initializer();
  set_raw_floats(t, "short_raw", {4}, {1, 2, 3});
  b.node("Add", {"x", "short_raw"}, {"y"});
  expect_error(load_model(write("short.onnx", b.bytes())).status(), StatusCode::kInvalidModel, {"short_raw", "raw_data"});

  OnnxBuilder c;
  c.input("x", kF32, {4}).output("y", kF32, {4});
  c.initializer("few_values", {4}, {1, 2});
  c.node("Add", {"x", "few_values"}, {"y"});
  expect_error(load_model(write("few.onnx", c.bytes())).status(), StatusCode::kInvalidModel, {"few_values"});
}

TEST(ReleaseTensorPayload, FreesDataKeepsMetadata) {
  ::onnx::TensorProto t;
  set_raw_floats(&t, "w", {2, 3}, {1, 2, 3, 4, 5, 6});
  for (int i = 0; i < 6; ++i) t.add_float_data(static_cast<float>(i));
  t.add_int64_data(7);
  frontend::onnx::release_tensor_payload(t);
  EXPECT_FALSE(t.has_raw_data());
  EXPECT_LE(t.raw_data().capacity(), sizeof(std::string));
  EXPECT_EQ(t.float_data_size(), 0);
  EXPECT_EQ(t.float_data().Capacity(), 0);
  EXPECT_EQ(t.int64_data_size(), 0);
  EXPECT_EQ(t.name(), "w");
  ASSERT_EQ(t.dims_size(), 2);
  EXPECT_EQ(t.dims(1), 3);
  EXPECT_EQ(t.data_type(), kF32);
}

}  // namespace
}  // namespace nfuse
