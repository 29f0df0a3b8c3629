// The C++ wrappers (nfuse.hpp) over libnfuse.so: RAII, Result values and errors as Status.
#include <nfuse/nfuse.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "support/onnx_builder.h"

namespace {

// y = x * x, x: f32 [2, 2].
std::string square_model() {
  nfuse::testing::OnnxBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 2});
  b.node("Mul", {"x", "x"}, {"y"}, "square");
  b.output("y", onnx::TensorProto::FLOAT, {2, 2});
  return b.bytes();
}

TEST(CppApi, RunsThroughRaiiHandles) {
  auto rt = nfuse::Runtime::create();
  ASSERT_TRUE(rt.ok()) << rt.status().to_string();
  auto backends = rt->backends();
  ASSERT_TRUE(backends.ok());
  EXPECT_NE(std::find(backends->begin(), backends->end(), "cpu"), backends->end());
  const std::string bytes = square_model();
  auto model = nfuse::Model::load(*rt, bytes.data(), bytes.size());
  ASSERT_TRUE(model.ok()) << model.status().to_string();
  for (nfuse_backend b : {NFUSE_BACKEND_REF, NFUSE_BACKEND_CPU, NFUSE_BACKEND_FUSION, NFUSE_BACKEND_AUTO}) {
    auto session = nfuse::Session::create(*rt, *model, nfuse::SessionOptions().backend(b).threads(2));
    ASSERT_TRUE(session.ok()) << nfuse_backend_name(b) << ": " << session.status().to_string();
    auto inputs = session->inputs();
    ASSERT_TRUE(inputs.ok());
    ASSERT_EQ(inputs->size(), 1u);
    EXPECT_EQ((*inputs)[0].name, "x");
    EXPECT_EQ((*inputs)[0].dims, (std::vector<int64_t>{2, 2}));
    std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f};
    auto t = nfuse::Tensor::wrap(NFUSE_DTYPE_FLOAT32, {2, 2}, x.data(), x.size() * sizeof(float));
    ASSERT_TRUE(t.ok());
    auto out = session->run({{"x", &*t}}, {"y"});
    ASSERT_TRUE(out.ok()) << out.status().to_string();
    ASSERT_EQ(out->size(), 1u);
    nfuse::Tensor& y = (*out)[0];
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(y.dtype(), NFUSE_DTYPE_FLOAT32);
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(y.data_as<float>()[i], x[i] * x[i]);
    auto report = session->placement_report();
    ASSERT_TRUE(report.ok()) << report.status().to_string();
    EXPECT_NE(report->find("square"), std::string::npos);
  }
}

TEST(CppApi, ErrorsComeBackAsStatus) {
  auto rt = nfuse::Runtime::create();
  ASSERT_TRUE(rt.ok());
  auto missing = nfuse::Model::load(*rt, "/nonexistent.onnx");
  EXPECT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), NFUSE_UNAVAILABLE);
  const std::string bytes = square_model();
  auto model = nfuse::Model::load(*rt, bytes.data(), bytes.size());
  ASSERT_TRUE(model.ok());
  auto bad = nfuse::Session::create(*rt, *model, nfuse::SessionOptions().threads(0));
  EXPECT_EQ(bad.status().code(), NFUSE_INVALID_ARGUMENT);
  EXPECT_NE(bad.status().message().find("threads"), std::string::npos);
  auto session = nfuse::Session::create(*rt, *model);
  ASSERT_TRUE(session.ok());
  auto wrong = nfuse::Tensor::create(NFUSE_DTYPE_FLOAT32, {3, 2});
  ASSERT_TRUE(wrong.ok());
  auto out = session->run({{"x", &*wrong}});
  EXPECT_EQ(out.status().code(), NFUSE_INVALID_ARGUMENT);
  EXPECT_NE(out.status().to_string().find("must have shape"), std::string::npos) << out.status().to_string();
  // A moved-from handle is empty; the C API refuses it rather than crashing.
  nfuse::Session moved = std::move(*session);
  EXPECT_EQ(session->get(), nullptr);
  EXPECT_EQ(session->inputs().status().code(), NFUSE_INVALID_ARGUMENT);
  EXPECT_TRUE(moved.inputs().ok());
}

}  // namespace
