// The C API as an application sees it: this binary links libnfuse.so and includes only nfuse.h
// (models are written with the ONNX protobuf builder). Every bad-input class of the API contract
// is exercised: NULL and stale handles, NULL out-pointers, unknown enums, wrong dtypes and shapes,
// unknown and duplicate names, sizes that overflow, corrupt models.
#include <nfuse/nfuse.h>

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "api/c_api_checks.h"
#include "support/onnx_builder.h"

namespace {

using nfuse::testing::OnnxBuilder;

using nfuse_test::Checked;
using nfuse_test::take;

// y = Relu(x + b), x: f32 [N, 3] with N symbolic, b = {-1, 0, 1}; z = Neg(x).
std::string add_relu_model() {
  OnnxBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {-1, 3});
  b.initializer("b", {3}, {-1.0f, 0.0f, 1.0f});
  b.node("Add", {"x", "b"}, {"s"}, "add");
  b.node("Relu", {"s"}, {"y"}, "relu");
  b.node("Neg", {"x"}, {"z"}, "neg");
  b.output("y", onnx::TensorProto::FLOAT, {-1, 3});
  b.output("z", onnx::TensorProto::FLOAT, {-1, 3});
  return b.bytes();
}

class CApi : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(take(nfuse_runtime_create(&rt_)).code, NFUSE_OK);
    const std::string bytes = add_relu_model();
    Checked c = take(nfuse_model_load_memory(rt_, bytes.data(), bytes.size(), &model_));
    ASSERT_EQ(c.code, NFUSE_OK) << c.message;
    c = take(nfuse_session_create(rt_, model_, nullptr, &session_));
    ASSERT_EQ(c.code, NFUSE_OK) << c.message;
  }
  void TearDown() override {
    nfuse_session_release(session_);
    nfuse_model_release(model_);
    nfuse_runtime_release(rt_);
  }
  nfuse_tensor* make_input(std::vector<float>* data, std::vector<int64_t> dims) {
    nfuse_tensor* t = nullptr;
    EXPECT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, dims.data(), dims.size(), data->data(),
                                      data->size() * sizeof(float), &t));
    return t;
  }

  nfuse_runtime* rt_ = nullptr;
  nfuse_model* model_ = nullptr;
  nfuse_session* session_ = nullptr;
};

TEST(CApiVersion, LibraryMatchesHeader) {
  EXPECT_EQ(nfuse_api_version(), static_cast<uint32_t>(NFUSE_API_VERSION));
  EXPECT_STREQ(nfuse_version(), NFUSE_EXPECTED_VERSION);
  EXPECT_EQ(nfuse_dtype_size(NFUSE_DTYPE_FLOAT16), 2u);
  EXPECT_EQ(nfuse_dtype_size(static_cast<nfuse_dtype>(99)), 0u);
  EXPECT_STREQ(nfuse_backend_name(NFUSE_BACKEND_FUSION), "fusion");
  EXPECT_EQ(nfuse_backend_name(static_cast<nfuse_backend>(42)), nullptr);
  EXPECT_STREQ(nfuse_status_code_name(NFUSE_INVALID_ARGUMENT), "invalid argument");
  EXPECT_EQ(nfuse_status_get_code(nullptr), NFUSE_OK);
  nfuse_status_release(nullptr);
}

TEST_F(CApi, MetadataNamesDtypesAndSymbolicDims) {
  size_t n = 0;
  EXPECT_NFUSE_OK(nfuse_session_io_count(session_, NFUSE_IO_INPUT, &n));
  EXPECT_EQ(n, 1u);
  EXPECT_NFUSE_OK(nfuse_session_io_count(session_, NFUSE_IO_OUTPUT, &n));
  EXPECT_EQ(n, 2u);
  const char* name = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_io_name(session_, NFUSE_IO_OUTPUT, 1, &name));
  EXPECT_STREQ(name, "z");
  nfuse_dtype dt = NFUSE_DTYPE_UNDEFINED;
  EXPECT_NFUSE_OK(nfuse_session_io_dtype(session_, NFUSE_IO_INPUT, 0, &dt));
  EXPECT_EQ(dt, NFUSE_DTYPE_FLOAT32);
  size_t rank = 0;
  EXPECT_NFUSE_OK(nfuse_session_io_rank(session_, NFUSE_IO_INPUT, 0, &rank));
  EXPECT_EQ(rank, 2u);
  int64_t v = 0;
  const char* sym = "unset";
  EXPECT_NFUSE_OK(nfuse_session_io_dim(session_, NFUSE_IO_INPUT, 0, 0, &v, &sym));
  EXPECT_EQ(v, -1);
  ASSERT_NE(sym, nullptr);
  EXPECT_STREQ(sym, "N");
  EXPECT_NFUSE_OK(nfuse_session_io_dim(session_, NFUSE_IO_INPUT, 0, 1, &v, &sym));
  EXPECT_EQ(v, 3);
  EXPECT_EQ(sym, nullptr);
  // Out of range, unknown kinds, NULL outs.
  EXPECT_NFUSE_CODE(nfuse_session_io_name(session_, NFUSE_IO_OUTPUT, 2, &name), NFUSE_INVALID_ARGUMENT, "out of range");
  EXPECT_NFUSE_CODE(nfuse_session_io_dim(session_, NFUSE_IO_INPUT, 0, 2, &v, &sym), NFUSE_INVALID_ARGUMENT, "dim 2");
  EXPECT_NFUSE_CODE(nfuse_session_io_count(session_, static_cast<nfuse_io_kind>(7), &n), NFUSE_INVALID_ARGUMENT,
                    "io kind");
  EXPECT_NFUSE_CODE(nfuse_session_io_count(session_, NFUSE_IO_INPUT, nullptr), NFUSE_INVALID_ARGUMENT, "out is NULL");
}

TEST_F(CApi, RunComputesRequestedOutputsOverCallerMemory) {
  std::vector<float> x = {-2.0f, 0.5f, -0.5f, 3.0f, 1.0f, -4.0f};
  nfuse_tensor* in = make_input(&x, {2, 3});
  const char* in_names[] = {"x"};
  const char* out_names[] = {"z", "y"};
  nfuse_tensor* out[2] = {nullptr, nullptr};
  EXPECT_NFUSE_OK(nfuse_session_run(session_, in_names, &in, 1, out_names, out, 2, nullptr));
  ASSERT_NE(out[0], nullptr);
  ASSERT_NE(out[1], nullptr);
  void* zp = nullptr;
  void* yp = nullptr;
  EXPECT_NFUSE_OK(nfuse_tensor_get_data(out[0], &zp));
  EXPECT_NFUSE_OK(nfuse_tensor_get_data(out[1], &yp));
  const float bias[3] = {-1.0f, 0.0f, 1.0f};
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(static_cast<float*>(zp)[i], -x[i]) << i;
    EXPECT_EQ(static_cast<float*>(yp)[i], std::max(0.0f, x[i] + bias[i % 3])) << i;
  }
  const int64_t* dims = nullptr;
  size_t rank = 0, bytes = 0;
  EXPECT_NFUSE_OK(nfuse_tensor_get_rank(out[1], &rank));
  EXPECT_NFUSE_OK(nfuse_tensor_get_dims(out[1], &dims));
  EXPECT_NFUSE_OK(nfuse_tensor_get_byte_size(out[1], &bytes));
  ASSERT_EQ(rank, 2u);
  EXPECT_EQ(dims[0], 2);
  EXPECT_EQ(bytes, 6 * sizeof(float));
  EXPECT_NE(zp, static_cast<void*>(x.data()));  // outputs are the caller's own tensors
  nfuse_tensor_release(out[0]);
  nfuse_tensor_release(out[1]);
  // All outputs in model order with NULL names; the caller's buffer is read in place.
  x[0] = 10.0f;
  EXPECT_NFUSE_OK(nfuse_session_run(session_, in_names, &in, 1, nullptr, out, 2, nullptr));
  EXPECT_NFUSE_OK(nfuse_tensor_get_data(out[0], &yp));
  EXPECT_EQ(static_cast<float*>(yp)[0], 9.0f);
  nfuse_tensor_release(out[0]);
  nfuse_tensor_release(out[1]);
  nfuse_tensor_release(in);
}

TEST_F(CApi, RunRefusesWrongDtypesShapesAndNames) {
  std::vector<float> x(6, 1.0f);
  nfuse_tensor* in = make_input(&x, {2, 3});
  std::vector<float> x4(8, 1.0f);
  nfuse_tensor* wrong_shape = make_input(&x4, {2, 4});
  std::vector<int32_t> xi(6, 1);
  nfuse_tensor* wrong_dtype = nullptr;
  const int64_t d23[] = {2, 3};
  EXPECT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_INT32, d23, 2, xi.data(), xi.size() * 4, &wrong_dtype));
  const char* x_name[] = {"x"};
  const char* bad_name[] = {"nope"};
  const char* two[] = {"x", "x"};
  const nfuse_tensor* twice[] = {in, in};
  nfuse_tensor* out[2] = {nullptr, nullptr};
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, x_name, &wrong_dtype, 1, nullptr, out, 2, nullptr),
                    NFUSE_INVALID_ARGUMENT, "must be f32, got i32");
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, x_name, &wrong_shape, 1, nullptr, out, 2, nullptr),
                    NFUSE_INVALID_ARGUMENT, "must have shape");
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, bad_name, &in, 1, nullptr, out, 2, nullptr), NFUSE_INVALID_ARGUMENT,
                    "no input named 'nope'");
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, nullptr, nullptr, 0, nullptr, out, 2, nullptr), NFUSE_INVALID_ARGUMENT,
                    "'x' was not given");
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, two, twice, 2, nullptr, out, 2, nullptr), NFUSE_INVALID_ARGUMENT,
                    "given twice");
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, x_name, &in, 1, bad_name, out, 1, nullptr), NFUSE_INVALID_ARGUMENT,
                    "no output named 'nope'");
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, x_name, &in, 1, nullptr, out, 1, nullptr), NFUSE_INVALID_ARGUMENT,
                    "output_count 1");
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, x_name, &in, 1, nullptr, nullptr, 2, nullptr), NFUSE_INVALID_ARGUMENT,
                    "outputs is NULL");
  const char* null_name[] = {nullptr};
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, null_name, &in, 1, nullptr, out, 2, nullptr), NFUSE_INVALID_ARGUMENT,
                    "input_names[0] is NULL");
  const nfuse_tensor* null_tensor[] = {nullptr};
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, x_name, null_tensor, 1, nullptr, out, 2, nullptr),
                    NFUSE_INVALID_ARGUMENT, "inputs[0] ('x') is NULL");
  EXPECT_EQ(out[0], nullptr);  // a failed run sets no output
  EXPECT_EQ(out[1], nullptr);
  // The session still runs after every refusal.
  EXPECT_NFUSE_OK(nfuse_session_run(session_, x_name, &in, 1, nullptr, out, 2, nullptr));
  nfuse_tensor_release(out[0]);
  nfuse_tensor_release(out[1]);
  nfuse_tensor_release(wrong_dtype);
  nfuse_tensor_release(wrong_shape);
  nfuse_tensor_release(in);
}

TEST_F(CApi, NullAndStaleHandlesAreRefused) {
  nfuse_tensor* out[2] = {nullptr, nullptr};
  EXPECT_NFUSE_CODE(nfuse_session_run(nullptr, nullptr, nullptr, 0, nullptr, out, 2, nullptr), NFUSE_INVALID_ARGUMENT,
                    "session is NULL");
  nfuse_model* m = nullptr;
  EXPECT_NFUSE_CODE(nfuse_model_load_file(nullptr, "x.onnx", &m), NFUSE_INVALID_ARGUMENT, "runtime is NULL");
  EXPECT_NFUSE_CODE(nfuse_model_load_file(rt_, nullptr, &m), NFUSE_INVALID_ARGUMENT, "path is NULL");
  EXPECT_NFUSE_CODE(nfuse_model_load_file(rt_, "x.onnx", nullptr), NFUSE_INVALID_ARGUMENT, "out is NULL");
  nfuse_session* s = nullptr;
  EXPECT_NFUSE_CODE(nfuse_session_create(rt_, nullptr, nullptr, &s), NFUSE_INVALID_ARGUMENT, "model is NULL");
  EXPECT_NFUSE_CODE(nfuse_runtime_create(nullptr), NFUSE_INVALID_ARGUMENT, "out is NULL");

  // Released handles: refused by lookup, never dereferenced.
  std::vector<float> x(6, 1.0f);
  nfuse_tensor* in = make_input(&x, {2, 3});
  nfuse_tensor_release(in);
  const char* x_name[] = {"x"};
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, x_name, &in, 1, nullptr, out, 2, nullptr), NFUSE_INVALID_ARGUMENT,
                    "not a live handle");
  nfuse_dtype dt;
  EXPECT_NFUSE_CODE(nfuse_tensor_get_dtype(in, &dt), NFUSE_INVALID_ARGUMENT, "not a live handle");
  nfuse_session_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_options_create(&o));
  nfuse_session_options_release(o);
  EXPECT_NFUSE_CODE(nfuse_session_options_set_threads(o, 2), NFUSE_INVALID_ARGUMENT, "not a live handle");
  EXPECT_NFUSE_CODE(nfuse_session_create(rt_, model_, o, &s), NFUSE_INVALID_ARGUMENT, "options is not a live handle");
  // A pointer that never was a handle.
  int not_a_handle = 0;
  EXPECT_NFUSE_CODE(nfuse_session_io_count(reinterpret_cast<nfuse_session*>(&not_a_handle), NFUSE_IO_INPUT, nullptr),
                    NFUSE_INVALID_ARGUMENT, "not a live handle");
  nfuse_session_release(reinterpret_cast<nfuse_session*>(&not_a_handle));  // ignored, not freed
  // Releasing twice is harmless.
  nfuse_tensor_release(in);
}

TEST(CApiTensor, SizesThatOverflowAndBadDims) {
  nfuse_tensor* t = nullptr;
  const int64_t huge[] = {std::numeric_limits<int64_t>::max() / 2, 4, 4};
  EXPECT_NFUSE_CODE(nfuse_tensor_create(NFUSE_DTYPE_FLOAT32, huge, 3, &t), NFUSE_INVALID_ARGUMENT, "overflow");
  const int64_t big[] = {int64_t{1} << 40};
  EXPECT_NFUSE_CODE(nfuse_tensor_create(NFUSE_DTYPE_FLOAT32, big, 1, &t), NFUSE_INVALID_ARGUMENT, "tensor limit");
  const int64_t negative[] = {2, -3};
  EXPECT_NFUSE_CODE(nfuse_tensor_create(NFUSE_DTYPE_FLOAT32, negative, 2, &t), NFUSE_INVALID_ARGUMENT, "negative");
  EXPECT_NFUSE_CODE(nfuse_tensor_create(NFUSE_DTYPE_FLOAT32, nullptr, 2, &t), NFUSE_INVALID_ARGUMENT, "dims is NULL");
  EXPECT_NFUSE_CODE(nfuse_tensor_create(static_cast<nfuse_dtype>(8), negative, 1, &t), NFUSE_INVALID_ARGUMENT,
                    "unknown dtype 8");
  const int64_t d[] = {2, 3};
  float buf[6] = {};
  EXPECT_NFUSE_CODE(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, d, 2, buf, sizeof buf - 1, &t), NFUSE_INVALID_ARGUMENT,
                    "byte_size 23 does not match 24");
  EXPECT_NFUSE_CODE(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, d, 2, nullptr, sizeof buf, &t), NFUSE_INVALID_ARGUMENT,
                    "data is NULL");
  EXPECT_EQ(t, nullptr);
  // A scalar and an empty tensor are fine.
  EXPECT_NFUSE_OK(nfuse_tensor_create(NFUSE_DTYPE_INT64, nullptr, 0, &t));
  size_t bytes = 0;
  EXPECT_NFUSE_OK(nfuse_tensor_get_byte_size(t, &bytes));
  EXPECT_EQ(bytes, 8u);
  nfuse_tensor_release(t);
  const int64_t empty[] = {0, 5};
  EXPECT_NFUSE_OK(nfuse_tensor_create(NFUSE_DTYPE_UINT8, empty, 2, &t));
  nfuse_tensor_release(t);
}

TEST(CApiModel, CorruptTruncatedAndMissingModels) {
  nfuse_runtime* rt = nullptr;
  ASSERT_EQ(take(nfuse_runtime_create(&rt)).code, NFUSE_OK);
  nfuse_model* m = nullptr;
  EXPECT_NFUSE_CODE(nfuse_model_load_file(rt, "/nonexistent/model.onnx", &m), NFUSE_UNAVAILABLE,
                    "/nonexistent/model.onnx");
  EXPECT_NFUSE_CODE(nfuse_model_load_file(rt, "/tmp", &m), NFUSE_INVALID_ARGUMENT, "is a directory");
  const std::string good = add_relu_model();
  EXPECT_NFUSE_CODE(nfuse_model_load_memory(rt, good.data(), 0, &m), NFUSE_INVALID_ARGUMENT, "size is 0");
  EXPECT_NFUSE_CODE(nfuse_model_load_memory(rt, nullptr, 10, &m), NFUSE_INVALID_ARGUMENT, "data is NULL");
  // Every truncation of a valid model, and random bytes: an error or a model, never a crash.
  for (size_t len = 1; len < good.size(); len += 7) {
    Checked c = take(nfuse_model_load_memory(rt, good.data(), len, &m));
    if (c.code == NFUSE_OK) {
      nfuse_model_release(m);
      m = nullptr;
    } else {
      EXPECT_FALSE(c.message.empty());
      EXPECT_EQ(m, nullptr);
    }
  }
  std::mt19937 rng(7);
  for (int i = 0; i < 200; ++i) {
    std::string junk(static_cast<size_t>(1 + rng() % 256), '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    Checked c = take(nfuse_model_load_memory(rt, junk.data(), junk.size(), &m));
    if (c.code == NFUSE_OK) nfuse_model_release(m);
    m = nullptr;
  }
  const std::string text = "definitely not a protobuf";
  EXPECT_NFUSE_CODE(nfuse_model_load_memory(rt, text.data(), text.size(), &m), NFUSE_INVALID_MODEL, "");
  nfuse_runtime_release(rt);
}

// A C caller may pass any int for an enum: negative values are refused (or answered "unknown"),
// and the library never loads them as enums (UBSan in make test's sanitizer build checks that).
TEST_F(CApi, NegativeEnumValuesAreRefused) {
  EXPECT_EQ(nfuse_backend_name(static_cast<nfuse_backend>(-1)), nullptr);
  EXPECT_EQ(nfuse_dtype_size(static_cast<nfuse_dtype>(-1)), 0u);
  EXPECT_STREQ(nfuse_dtype_name(static_cast<nfuse_dtype>(-1)), "undefined");
  EXPECT_STREQ(nfuse_status_code_name(static_cast<nfuse_status_code>(-1)), "unknown");
  size_t n = 0;
  EXPECT_NFUSE_CODE(nfuse_session_io_count(session_, static_cast<nfuse_io_kind>(-1), &n), NFUSE_INVALID_ARGUMENT,
                    "unknown io kind -1");
  const char* name = nullptr;
  EXPECT_NFUSE_CODE(nfuse_session_io_name(session_, static_cast<nfuse_io_kind>(-2), 0, &name), NFUSE_INVALID_ARGUMENT,
                    "unknown io kind -2");
  nfuse_session_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_options_create(&o));
  EXPECT_NFUSE_CODE(nfuse_session_options_set_backend(o, static_cast<nfuse_backend>(-1)), NFUSE_INVALID_ARGUMENT,
                    "unknown backend -1");
  const nfuse_backend order[] = {NFUSE_BACKEND_CPU, static_cast<nfuse_backend>(-4)};
  EXPECT_NFUSE_CODE(nfuse_session_options_set_preferred(o, order, 2), NFUSE_INVALID_ARGUMENT, "unknown backend -4");
  EXPECT_NFUSE_CODE(nfuse_session_options_add_pin(o, "relu", static_cast<nfuse_backend>(-1)), NFUSE_INVALID_ARGUMENT,
                    "unknown backend -1");
  nfuse_session_options_release(o);
  EXPECT_NFUSE_CODE(nfuse_runtime_set_log_sink(rt_, static_cast<nfuse_log_level>(-1), nullptr, nullptr),
                    NFUSE_INVALID_ARGUMENT, "unknown log level -1");
  EXPECT_NFUSE_CODE(nfuse_runtime_set_context_compat(rt_, static_cast<nfuse_compat_mode>(-1)), NFUSE_INVALID_ARGUMENT,
                    "unknown mode -1");
  const int64_t dims[] = {2};
  nfuse_tensor* t = nullptr;
  EXPECT_NFUSE_CODE(nfuse_tensor_create(static_cast<nfuse_dtype>(-1), dims, 1, &t), NFUSE_INVALID_ARGUMENT, "dtype");
}

TEST_F(CApi, OptionsRefuseUnknownEnumsAndValues) {
  nfuse_session_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_options_create(&o));
  EXPECT_NFUSE_CODE(nfuse_session_options_set_backend(o, static_cast<nfuse_backend>(9)), NFUSE_INVALID_ARGUMENT,
                    "unknown backend 9");
  EXPECT_NFUSE_CODE(nfuse_session_options_set_backend_name(o, "npu"), NFUSE_NOT_FOUND, "unknown backend 'npu'");
  EXPECT_NFUSE_CODE(nfuse_session_options_set_backend_name(o, ""), NFUSE_INVALID_ARGUMENT, "name is empty");
  EXPECT_NFUSE_CODE(nfuse_session_options_set_threads(o, 0), NFUSE_INVALID_ARGUMENT, "threads must be");
  EXPECT_NFUSE_CODE(nfuse_session_options_set_tile_rows(o, -1), NFUSE_INVALID_ARGUMENT, "rows must be");
  const nfuse_backend with_auto[] = {NFUSE_BACKEND_CPU, NFUSE_BACKEND_AUTO};
  EXPECT_NFUSE_CODE(nfuse_session_options_set_preferred(o, with_auto, 2), NFUSE_INVALID_ARGUMENT, "partitioner");
  EXPECT_NFUSE_CODE(nfuse_session_options_set_preferred(o, nullptr, 2), NFUSE_INVALID_ARGUMENT, "order is NULL");
  EXPECT_NFUSE_CODE(nfuse_session_options_add_pin(o, "relu", NFUSE_BACKEND_AUTO), NFUSE_INVALID_ARGUMENT,
                    "not to 'auto'");
  EXPECT_NFUSE_CODE(nfuse_session_options_add_pin(o, nullptr, NFUSE_BACKEND_CPU), NFUSE_INVALID_ARGUMENT, "is NULL");
  EXPECT_NFUSE_CODE(nfuse_session_options_add_output(o, nullptr), NFUSE_INVALID_ARGUMENT, "name is NULL");
  EXPECT_NFUSE_CODE(nfuse_runtime_set_log_sink(rt_, static_cast<nfuse_log_level>(9), nullptr, nullptr),
                    NFUSE_INVALID_ARGUMENT, "log level");
  // Keeping an output that does not exist fails at session creation, naming it.
  EXPECT_NFUSE_OK(nfuse_session_options_add_output(o, "missing_output"));
  nfuse_session* s = nullptr;
  EXPECT_NFUSE_CODE(nfuse_session_create(rt_, model_, o, &s), NFUSE_INVALID_ARGUMENT, "missing_output");
  EXPECT_EQ(s, nullptr);
  nfuse_session_options_release(o);
}

TEST_F(CApi, OptionsShapeTheSessionAndTheReport) {
  nfuse_session_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_options_create(&o));
  EXPECT_NFUSE_OK(nfuse_session_options_set_backend(o, NFUSE_BACKEND_CPU));
  EXPECT_NFUSE_OK(nfuse_session_options_add_pin(o, "Neg", NFUSE_BACKEND_REF));
  EXPECT_NFUSE_OK(nfuse_session_options_add_output(o, "z"));
  EXPECT_NFUSE_OK(nfuse_session_options_set_threads(o, 2));
  std::vector<std::string> logged;
  EXPECT_NFUSE_OK(nfuse_runtime_set_log_sink(
      rt_, NFUSE_LOG_VERBOSE,
      [](void* user, nfuse_log_level, const char* msg) {
        static_cast<std::vector<std::string>*>(user)->push_back(msg);
      },
      &logged));
  nfuse_session* s = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_create(rt_, model_, o, &s));
  nfuse_session_options_release(o);
  EXPECT_FALSE(logged.empty());  // eliminate_dead_code dropped the y branch
  size_t n = 0;
  EXPECT_NFUSE_OK(nfuse_session_io_count(s, NFUSE_IO_OUTPUT, &n));
  EXPECT_EQ(n, 1u);
  const char* json = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_placement_report(s, &json));
  ASSERT_NE(json, nullptr);
  const std::string report = json;
  EXPECT_NE(report.find("\"neg\""), std::string::npos) << report;
  EXPECT_NE(report.find("\"ref\""), std::string::npos) << report;   // the pin
  EXPECT_EQ(report.find("\"relu\""), std::string::npos) << report;  // dropped with y
  nfuse_session_release(s);
  // The model outlives nothing: sessions made from it after release of another still work.
  EXPECT_NFUSE_OK(nfuse_session_create(rt_, model_, nullptr, &s));
  nfuse_session_release(s);
  size_t backends = 0;
  EXPECT_NFUSE_OK(nfuse_runtime_backend_count(rt_, &backends));
  EXPECT_GE(backends, 3u);
  const char* bname = nullptr;
  EXPECT_NFUSE_CODE(nfuse_runtime_backend_name(rt_, backends, &bname), NFUSE_INVALID_ARGUMENT, "out of range");
}

TEST_F(CApi, ProfileAndTrafficReportWhatRan) {
  std::vector<float> x(6, 1.0f);
  nfuse_tensor* in = make_input(&x, {2, 3});
  const char* x_name[] = {"x"};
  nfuse_tensor* out[2] = {nullptr, nullptr};
  nfuse_run_options* ro = nullptr;
  EXPECT_NFUSE_OK(nfuse_run_options_create(&ro));
  EXPECT_NFUSE_OK(nfuse_run_options_set_profiling(ro, 1));
  for (int i = 0; i < 2; ++i) {
    EXPECT_NFUSE_OK(nfuse_session_run(session_, x_name, &in, 1, nullptr, out, 2, ro));
    nfuse_tensor_release(out[0]);
    nfuse_tensor_release(out[1]);
  }
  EXPECT_NFUSE_OK(nfuse_session_run(session_, x_name, &in, 1, nullptr, out, 2, nullptr));  // not profiled
  nfuse_tensor_release(out[0]);
  nfuse_tensor_release(out[1]);
  const char* placement = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_placement_report(session_, &placement));
  const char* json = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_profile(session_, &json));
  std::string profile = json;
  EXPECT_NE(profile.find("\"runs\":2"), std::string::npos) << profile;
  EXPECT_NE(profile.find("'neg'"), std::string::npos) << profile;
  // The same two profiled runs as a Chrome trace: two run events, the three nodes twice each.
  EXPECT_NFUSE_OK(nfuse_session_trace(session_, &json));
  const std::string trace = json;
  EXPECT_EQ(trace.rfind("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", 0), 0u) << trace;
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = trace.find(what); at != std::string::npos; at = trace.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("\"cat\":\"run\""), 2u) << trace;
  EXPECT_EQ(count("\"cat\":\"op\""), 6u) << trace;
  EXPECT_EQ(count("\"name\":\"Neg 'neg'\""), 2u) << trace;
  EXPECT_NE(trace.find("\"reference_kernel\":true"), std::string::npos) << trace;
  EXPECT_NFUSE_CODE(nfuse_session_trace(nullptr, &json), NFUSE_INVALID_ARGUMENT, "session is NULL");
  EXPECT_NFUSE_CODE(nfuse_session_trace(session_, nullptr), NFUSE_INVALID_ARGUMENT, "json is NULL");
  EXPECT_NFUSE_OK(nfuse_session_profile_reset(session_));
  EXPECT_NFUSE_OK(nfuse_session_profile(session_, &json));
  profile = json;
  EXPECT_NE(profile.find("\"runs\":0"), std::string::npos) << profile;
  EXPECT_NFUSE_OK(nfuse_session_traffic(session_, &json));
  const std::string traffic = json;
  // Three nodes over [2, 3] f32 tensors, each reading its input from and writing its output to
  // the arena: at least 3 x (24 + 24) bytes per inference.
  const size_t key = traffic.find("\"arena_bytes_fused\":");
  ASSERT_NE(key, std::string::npos) << traffic;
  EXPECT_GE(std::stoll(traffic.substr(key + std::strlen("\"arena_bytes_fused\":"))), 3 * 48) << traffic;
  // Each text stays valid until its own function runs again, not until any of the three does.
  EXPECT_NE(std::string(placement).find("\"partitions\""), std::string::npos) << placement;
  EXPECT_NFUSE_CODE(nfuse_run_options_set_profiling(nullptr, 1), NFUSE_INVALID_ARGUMENT, "options is NULL");
  nfuse_run_options_release(ro);
  EXPECT_NFUSE_CODE(nfuse_session_run(session_, x_name, &in, 1, nullptr, out, 2, ro), NFUSE_INVALID_ARGUMENT,
                    "run_options is not a live handle");
  nfuse_tensor_release(in);
}

TEST(CApiTensor, NpyRoundTripAndBadFiles) {
  const int64_t dims[] = {2, 2};
  int32_t values[] = {1, -2, 3, 1 << 20};
  nfuse_tensor* t = nullptr;
  EXPECT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_INT32, dims, 2, values, sizeof values, &t));
  const std::string path = ::testing::TempDir() + "/nfuse_api_roundtrip.npy";
  EXPECT_NFUSE_OK(nfuse_tensor_save_npy(t, path.c_str()));
  nfuse_tensor* back = nullptr;
  EXPECT_NFUSE_OK(nfuse_tensor_load_npy(path.c_str(), &back));
  nfuse_dtype dt;
  void* data = nullptr;
  size_t bytes = 0;
  EXPECT_NFUSE_OK(nfuse_tensor_get_dtype(back, &dt));
  EXPECT_NFUSE_OK(nfuse_tensor_get_data(back, &data));
  EXPECT_NFUSE_OK(nfuse_tensor_get_byte_size(back, &bytes));
  EXPECT_EQ(dt, NFUSE_DTYPE_INT32);
  ASSERT_EQ(bytes, sizeof values);
  EXPECT_EQ(std::memcmp(data, values, bytes), 0);
  nfuse_tensor_release(back);
  nfuse_tensor_release(t);
  EXPECT_NFUSE_CODE(nfuse_tensor_load_npy("/nonexistent/x.npy", &back), NFUSE_NOT_FOUND, "/nonexistent/x.npy");
  const std::string junk = ::testing::TempDir() + "/nfuse_api_junk.npy";
  if (std::FILE* f = std::fopen(junk.c_str(), "wb")) {
    std::fputs("\x93NUMPY garbage", f);
    std::fclose(f);
  }
  EXPECT_NFUSE_CODE(nfuse_tensor_load_npy(junk.c_str(), &back), NFUSE_INVALID_ARGUMENT, "nfuse_api_junk.npy");
  EXPECT_EQ(back, nullptr);
  EXPECT_NFUSE_CODE(nfuse_tensor_save_npy(nullptr, path.c_str()), NFUSE_INVALID_ARGUMENT, "tensor is NULL");
  EXPECT_NFUSE_CODE(nfuse_tensor_load_npy(nullptr, &back), NFUSE_INVALID_ARGUMENT, "path is NULL");
}

TEST_F(CApi, MissingDeviceProfileIsNamed) {
  nfuse_session_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_options_create(&o));
  EXPECT_NFUSE_OK(nfuse_session_options_set_device_profile(o, "/nonexistent/profile.json"));
  nfuse_session* s = nullptr;
  std::vector<float> x(6, 1.0f);
  nfuse_tensor* in = make_input(&x, {2, 3});
  const char* x_name[] = {"x"};
  nfuse_tensor* out[2] = {nullptr, nullptr};
  // The model has a symbolic dim: the plan (and the profile) is read at the first run.
  EXPECT_NFUSE_OK(nfuse_session_create(rt_, model_, o, &s));
  EXPECT_NFUSE_CODE(nfuse_session_run(s, x_name, &in, 1, nullptr, out, 2, nullptr), NFUSE_UNAVAILABLE,
                    "/nonexistent/profile.json");
  nfuse_session_release(s);
  nfuse_session_options_release(o);
  nfuse_tensor_release(in);
}

// nfuse_session_last_run_stats (API level 2): a record per run, counted, of what ran where; the
// fixture's model runs three nodes on cpu, Neg on its reference kernel (cpu has no Neg of its own).
TEST_F(CApi, LastRunStatsDescribeEachRun) {
  const char* json = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_last_run_stats(session_, &json));
  EXPECT_NE(std::string(json).find("\"run\":0"), std::string::npos) << json;
  std::vector<float> x(6, 1.0f);
  nfuse_tensor* in = make_input(&x, {2, 3});
  const char* x_name[] = {"x"};
  for (int run = 1; run <= 2; ++run) {
    nfuse_tensor* out[2] = {nullptr, nullptr};
    EXPECT_NFUSE_OK(nfuse_session_run(session_, x_name, &in, 1, nullptr, out, 2, nullptr));
    for (nfuse_tensor* t : out) nfuse_tensor_release(t);
    EXPECT_NFUSE_OK(nfuse_session_last_run_stats(session_, &json));
    const std::string s = json;
    EXPECT_NE(s.find("\"run\":" + std::to_string(run)), std::string::npos) << s;
    EXPECT_NE(s.find("{\"backend\":\"cpu\",\"ms\":"), std::string::npos) << s;
    EXPECT_NE(s.find("\"nodes\":3,\"reference_nodes\":1}"), std::string::npos) << s;
    EXPECT_NE(s.find("\"wall_ms\":"), std::string::npos) << s;
    EXPECT_NE(s.find("\"output_bytes_copied\":0"), std::string::npos) << s;
    EXPECT_EQ(s.find('\n'), std::string::npos) << "one line";
  }
  nfuse_tensor_release(in);
  EXPECT_NFUSE_CODE(nfuse_session_last_run_stats(nullptr, &json), NFUSE_INVALID_ARGUMENT, "session is NULL");
  EXPECT_NFUSE_CODE(nfuse_session_last_run_stats(session_, nullptr), NFUSE_INVALID_ARGUMENT, "json is NULL");
}

// nfuse_session_options_set_input_shape (API level 2): the plan for those dims is built at
// creation, so what planning reads (here a missing device profile) fails there, not at the first
// run; dims the graph cannot take fail planning there, a wrong rank and an unknown name are
// refused naming the input; a session planned so runs those dims.
TEST_F(CApi, InputShapesArePlannedAtCreation) {
  nfuse_session_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_options_create(&o));
  const int64_t dims[] = {2, 3};
  EXPECT_NFUSE_OK(nfuse_session_options_set_input_shape(o, "x", dims, 2));
  EXPECT_NFUSE_OK(nfuse_session_options_set_device_profile(o, "/nonexistent/profile.json"));
  nfuse_session* s = nullptr;
  EXPECT_NFUSE_CODE(nfuse_session_create(rt_, model_, o, &s), NFUSE_UNAVAILABLE, "/nonexistent/profile.json");
  EXPECT_EQ(s, nullptr);
  EXPECT_NFUSE_OK(nfuse_session_options_set_device_profile(o, nullptr));
  EXPECT_NFUSE_OK(nfuse_session_create(rt_, model_, o, &s));
  std::vector<float> x = {-2.0f, 0.5f, 3.0f, 1.0f, -1.0f, 0.0f};
  nfuse_tensor* in = make_input(&x, {2, 3});
  const char* x_name[] = {"x"};
  nfuse_tensor* out[2] = {nullptr, nullptr};
  EXPECT_NFUSE_OK(nfuse_session_run(s, x_name, &in, 1, nullptr, out, 2, nullptr));
  void* y = nullptr;
  EXPECT_NFUSE_OK(nfuse_tensor_get_data(out[0], &y));
  EXPECT_EQ(static_cast<float*>(y)[1], 0.5f);  // relu(0.5 + 0)
  EXPECT_EQ(static_cast<float*>(y)[3], 0.0f);  // relu(1 - 1)
  for (nfuse_tensor* t : out) nfuse_tensor_release(t);
  nfuse_tensor_release(in);
  nfuse_session_release(s);

  const int64_t wrong_width[] = {2, 4};
  EXPECT_NFUSE_OK(nfuse_session_options_set_input_shape(o, "x", wrong_width, 2));
  EXPECT_NFUSE_CODE(nfuse_session_create(rt_, model_, o, &s), NFUSE_INVALID_MODEL, "cannot be broadcast: dim 3 vs 4");
  EXPECT_NFUSE_OK(nfuse_session_options_set_input_shape(o, "x", dims, 1));
  EXPECT_NFUSE_CODE(nfuse_session_create(rt_, model_, o, &s), NFUSE_INVALID_ARGUMENT, "rank 1");
  EXPECT_NFUSE_OK(nfuse_session_options_set_input_shape(o, "x", dims, 2));
  EXPECT_NFUSE_OK(nfuse_session_options_set_input_shape(o, "nope", dims, 2));
  EXPECT_NFUSE_CODE(nfuse_session_create(rt_, model_, o, &s), NFUSE_INVALID_ARGUMENT, "no input of that name");
  nfuse_session_options_release(o);

  EXPECT_NFUSE_OK(nfuse_session_options_create(&o));
  const int64_t negative[] = {-1, 3};
  EXPECT_NFUSE_CODE(nfuse_session_options_set_input_shape(o, "x", negative, 2), NFUSE_INVALID_ARGUMENT, "negative");
  EXPECT_NFUSE_CODE(nfuse_session_options_set_input_shape(o, "x", nullptr, 2), NFUSE_INVALID_ARGUMENT, "NULL");
  EXPECT_NFUSE_CODE(nfuse_session_options_set_input_shape(o, nullptr, dims, 2), NFUSE_INVALID_ARGUMENT, "NULL");
  EXPECT_NFUSE_CODE(nfuse_session_options_set_input_shape(nullptr, "x", dims, 2), NFUSE_INVALID_ARGUMENT, "");
  nfuse_session_options_release(o);
}

TEST_F(CApi, QuantizeRefusesBadOptions) {
  nfuse_quantize_options* q = nullptr;
  EXPECT_NFUSE_OK(nfuse_quantize_options_create(&q));
  EXPECT_NFUSE_CODE(nfuse_quantize(rt_, "m.onnx", "o.onnx", q, nullptr, nullptr), NFUSE_INVALID_ARGUMENT,
                    "no calibration data");
  EXPECT_NFUSE_CODE(nfuse_quantize_options_set_method(q, static_cast<nfuse_calibration_method>(7), 0),
                    NFUSE_INVALID_ARGUMENT, "unknown calibration method 7");
  EXPECT_NFUSE_CODE(nfuse_quantize_options_set_method(q, NFUSE_CALIBRATION_PERCENTILE, 101.0), NFUSE_INVALID_ARGUMENT,
                    "percentile");
  EXPECT_NFUSE_CODE(nfuse_quantize_options_set_precision(q, NFUSE_PRECISION_MIXED, 0.0, NFUSE_PROMOTE_INT16),
                    NFUSE_INVALID_ARGUMENT, "target_cosine");
  EXPECT_NFUSE_CODE(nfuse_quantize_options_set_threads(q, 0), NFUSE_INVALID_ARGUMENT, "threads");
  EXPECT_NFUSE_CODE(
      nfuse_quantize_options_set_activation_equalization(q, static_cast<nfuse_activation_equalization>(3)),
      NFUSE_INVALID_ARGUMENT, "activation equalization");
  EXPECT_NFUSE_CODE(nfuse_quantize_options_set_activation_equalization(nullptr, NFUSE_EQUALIZE_NONE),
                    NFUSE_INVALID_ARGUMENT, "options");
  EXPECT_NFUSE_OK(nfuse_quantize_options_set_activation_equalization(q, NFUSE_EQUALIZE_NONE));
  EXPECT_NFUSE_CODE(nfuse_quantize_options_set_calibration_data(q, nullptr, 0), NFUSE_INVALID_ARGUMENT, "folder");
  const float zero_std[3] = {1.0f, 0.0f, 1.0f};
  EXPECT_NFUSE_CODE(nfuse_quantize_options_set_image_preprocessing(q, 0, 0, nullptr, zero_std, NFUSE_IMAGE_NCHW),
                    NFUSE_INVALID_ARGUMENT, "std must be positive");
  EXPECT_NFUSE_CODE(nfuse_quantize_options_set_image_preprocessing(q, 10, 0, nullptr, nullptr, NFUSE_IMAGE_NCHW),
                    NFUSE_INVALID_ARGUMENT, "both");
  EXPECT_NFUSE_OK(nfuse_quantize_options_set_calibration_data(q, "/nonexistent/calib", 0));
  EXPECT_NFUSE_CODE(nfuse_quantize(rt_, "/nonexistent/model.onnx", "o.onnx", q, nullptr, nullptr), NFUSE_NOT_FOUND,
                    "/nonexistent/model.onnx");
  EXPECT_NFUSE_CODE(nfuse_quantize(rt_, nullptr, "o.onnx", q, nullptr, nullptr), NFUSE_INVALID_ARGUMENT,
                    "model_path is NULL");
  nfuse_quantize_options_release(q);
  EXPECT_NFUSE_CODE(nfuse_quantize(rt_, "m.onnx", "o.onnx", q, nullptr, nullptr), NFUSE_INVALID_ARGUMENT,
                    "not a live handle");
}

}  // namespace
