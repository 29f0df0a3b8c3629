// The C API's context binaries and zero-copy I/O as an application sees them (nfuse.h only):
// save a session as a binary, load it from a file, from memory and from a borrowed buffer, check
// it; bind caller memory to inputs and outputs and count what was copied.
#include <nfuse/nfuse.h>

#include <gtest/gtest.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "api/c_api_checks.h"
#include "support/onnx_builder.h"

namespace {

using nfuse::testing::OnnxBuilder;

using nfuse_test::Checked;
using nfuse_test::take;

// y = Relu(x @ W + b): x f32[2, 8], W [8, 16], b [16] (MatMul + Add, fused on the cpu backend).
std::string dense_model() {
  OnnxBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 8});
  std::vector<float> w(8 * 16), bias(16);
  for (size_t i = 0; i < w.size(); ++i) w[i] = static_cast<float>(static_cast<int>(i % 11) - 5) / 7.0f;
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i) / 16.0f - 0.5f;
  b.initializer("w", {8, 16}, w);
  b.initializer("b", {16}, bias);
  b.node("MatMul", {"x", "w"}, {"m"}, "matmul");
  b.node("Add", {"m", "b"}, {"s"}, "add");
  b.node("Relu", {"s"}, {"y"}, "relu");
  b.output("y", onnx::TensorProto::FLOAT, {2, 16});
  return b.bytes();
}

std::vector<float> input_values() {
  std::vector<float> x(16);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i % 5) - 1.5f;
  return x;
}

int warnings = 0;
void count_warnings(void*, nfuse_log_level level, const char*) {
  if (level == NFUSE_LOG_WARNING) ++warnings;
}

class CApiContext : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NFUSE_OK(nfuse_runtime_create(&rt_));
    const std::string bytes = dense_model();
    ASSERT_NFUSE_OK(nfuse_model_load_memory(rt_, bytes.data(), bytes.size(), &model_));
    nfuse_session_options* o = nullptr;
    ASSERT_NFUSE_OK(nfuse_session_options_create(&o));
    ASSERT_NFUSE_OK(nfuse_session_options_set_backend(o, NFUSE_BACKEND_CPU));
    ASSERT_NFUSE_OK(nfuse_session_create(rt_, model_, o, &session_));
    nfuse_session_options_release(o);
    expected_ = run(session_);
    path_ = ::testing::TempDir() + "nfuse_c_api_context_" + std::to_string(::getpid()) + ".nfc";
  }
  void TearDown() override {
    std::remove(path_.c_str());
    nfuse_session_release(session_);
    nfuse_model_release(model_);
    nfuse_runtime_release(rt_);
  }
  std::vector<float> run(nfuse_session* s) {
    std::vector<float> x = input_values();
    const int64_t dims[] = {2, 8};
    nfuse_tensor* in = nullptr;
    EXPECT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, dims, 2, x.data(), x.size() * sizeof(float), &in));
    const char* names[] = {"x"};
    nfuse_tensor* out = nullptr;
    EXPECT_NFUSE_OK(nfuse_session_run(s, names, &in, 1, nullptr, &out, 1, nullptr));
    std::vector<float> y(32);
    void* data = nullptr;
    if (out && !take(nfuse_tensor_get_data(out, &data)).code) std::memcpy(y.data(), data, y.size() * sizeof(float));
    nfuse_tensor_release(out);
    nfuse_tensor_release(in);
    return y;
  }

  nfuse_runtime* rt_ = nullptr;
  nfuse_model* model_ = nullptr;
  nfuse_session* session_ = nullptr;
  std::vector<float> expected_;
  std::string path_;
};

TEST_F(CApiContext, SavedBinaryLoadsFromFileMemoryAndABorrowedBuffer) {
  ASSERT_NFUSE_OK(nfuse_session_save_context(session_, model_, path_.c_str()));
  nfuse_context_validity validity = NFUSE_CONTEXT_INVALID;
  char* reasons = nullptr;
  EXPECT_NFUSE_OK(nfuse_context_check_file(path_.c_str(), nullptr, &validity, &reasons));
  EXPECT_EQ(validity, NFUSE_CONTEXT_VALID);
  EXPECT_EQ(reasons, nullptr);
  nfuse_string_release(reasons);

  nfuse_model* from_file = nullptr;
  ASSERT_NFUSE_OK(nfuse_model_load_file(rt_, path_.c_str(), &from_file));
  int is_context = 0;
  EXPECT_NFUSE_OK(nfuse_model_is_context(from_file, &is_context));
  EXPECT_EQ(is_context, 1);
  nfuse_session* s = nullptr;
  ASSERT_NFUSE_OK(nfuse_session_create(rt_, from_file, nullptr, &s));
  const char* backend = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_backend(s, &backend));
  EXPECT_STREQ(backend, "cpu");  // the binary's, not the options' default
  EXPECT_EQ(run(s), expected_);
  nfuse_session_release(s);
  nfuse_model_release(from_file);

  std::ifstream f(path_, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  nfuse_model* from_memory = nullptr;
  ASSERT_NFUSE_OK(nfuse_model_load_memory(rt_, bytes.data(), bytes.size(), &from_memory));
  ASSERT_NFUSE_OK(nfuse_session_create(rt_, from_memory, nullptr, &s));
  EXPECT_EQ(run(s), expected_);
  nfuse_session_release(s);
  nfuse_model_release(from_memory);

  void* aligned = std::aligned_alloc(64, (bytes.size() + 63) / 64 * 64);
  std::memcpy(aligned, bytes.data(), bytes.size());
  nfuse_model* borrowed = nullptr;
  ASSERT_NFUSE_OK(nfuse_model_load_context_buffer(rt_, aligned, bytes.size(), &borrowed));
  ASSERT_NFUSE_OK(nfuse_session_create(rt_, borrowed, nullptr, &s));
  EXPECT_EQ(run(s), expected_);
  nfuse_session_release(s);
  nfuse_model_release(borrowed);
  EXPECT_NFUSE_CODE(nfuse_model_load_context_buffer(rt_, static_cast<char*>(aligned) + 4, bytes.size() - 4, &borrowed),
                    NFUSE_INVALID_ARGUMENT, "64-byte aligned");
  std::free(aligned);
}

TEST_F(CApiContext, CheckAndLoadAnswerTypedErrors) {
  ASSERT_NFUSE_OK(nfuse_session_save_context(session_, model_, path_.c_str()));
  std::ifstream f(path_, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const std::string cut = path_ + ".cut";
  std::ofstream(cut, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size() / 2));
  nfuse_context_validity validity = NFUSE_CONTEXT_VALID;
  char* reasons = nullptr;
  EXPECT_NFUSE_CODE(nfuse_context_check_file(cut.c_str(), nullptr, &validity, &reasons), NFUSE_CORRUPT_BINARY,
                    "truncated");
  EXPECT_EQ(validity, NFUSE_CONTEXT_INVALID);
  ASSERT_NE(reasons, nullptr);
  EXPECT_NE(std::string(reasons).find("truncated"), std::string::npos);
  nfuse_string_release(reasons);
  nfuse_model* m = nullptr;
  EXPECT_NFUSE_CODE(nfuse_model_load_file(rt_, cut.c_str(), &m), NFUSE_CORRUPT_BINARY, "truncated");
  std::remove(cut.c_str());

  uint32_t future = 99;
  std::memcpy(bytes.data() + 8, &future, sizeof future);  // the prefix's format version
  const std::string newer = path_ + ".v99";
  std::ofstream(newer, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  EXPECT_NFUSE_CODE(nfuse_context_check_file(newer.c_str(), nullptr, &validity, nullptr), NFUSE_VERSION_MISMATCH,
                    "format 99");
  EXPECT_NFUSE_CODE(nfuse_model_load_file(rt_, newer.c_str(), &m), NFUSE_VERSION_MISMATCH, "upgrade nfuse");
  std::remove(newer.c_str());

  const std::string other = path_ + ".onnx";
  std::ofstream(other, std::ios::binary) << "not the source model";
  EXPECT_NFUSE_CODE(nfuse_context_check_file(path_.c_str(), other.c_str(), &validity, nullptr), NFUSE_MODEL_MISMATCH,
                    "recompile");
  std::remove(other.c_str());

  EXPECT_NFUSE_CODE(nfuse_context_check_file(nullptr, nullptr, &validity, nullptr), NFUSE_INVALID_ARGUMENT,
                    "path is NULL");
  EXPECT_NFUSE_CODE(nfuse_context_check_file(path_.c_str(), nullptr, nullptr, nullptr), NFUSE_INVALID_ARGUMENT,
                    "validity is NULL");
  EXPECT_NFUSE_CODE(nfuse_session_save_context(nullptr, model_, path_.c_str()), NFUSE_INVALID_ARGUMENT,
                    "session is NULL");
  EXPECT_NFUSE_CODE(nfuse_runtime_set_context_compat(rt_, static_cast<nfuse_compat_mode>(5)), NFUSE_INVALID_ARGUMENT,
                    "unknown mode");
  EXPECT_NFUSE_OK(nfuse_runtime_set_context_compat(rt_, NFUSE_COMPAT_STRICT));
  EXPECT_NFUSE_OK(nfuse_model_load_file(rt_, path_.c_str(), &m));  // valid here: strict loads it too
  nfuse_model_release(m);
}

TEST_F(CApiContext, BoundAlignedOutputsAreWrittenInPlaceAndMisalignedOnesCopiedOnce) {
  ASSERT_NFUSE_OK(nfuse_runtime_set_log_sink(rt_, NFUSE_LOG_WARNING, count_warnings, nullptr));
  warnings = 0;
  std::vector<float> x = input_values();
  const int64_t in_dims[] = {2, 8}, out_dims[] = {2, 16};
  nfuse_tensor* in = nullptr;
  ASSERT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, in_dims, 2, x.data(), x.size() * sizeof(float), &in));
  float* y = static_cast<float*>(std::aligned_alloc(64, 64 + 32 * sizeof(float)));
  nfuse_tensor* out = nullptr;
  ASSERT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, out_dims, 2, y, 32 * sizeof(float), &out));
  EXPECT_NFUSE_CODE(nfuse_session_run_bound(session_, nullptr), NFUSE_INVALID_ARGUMENT, "'x' is not bound");
  ASSERT_NFUSE_OK(nfuse_session_bind_input(session_, "x", in));
  ASSERT_NFUSE_OK(nfuse_session_bind_output(session_, "y", out));
  nfuse_tensor_release(out);  // the binding outlives the handle; the memory is the caller's
  nfuse_tensor_release(in);
  uint64_t copied_in = 1, copied_out = 1;
  for (int run = 0; run < 2; ++run) {  // bound once, run twice
    std::memset(y, 0, 32 * sizeof(float));
    ASSERT_NFUSE_OK(nfuse_session_run_bound(session_, nullptr));
    EXPECT_NFUSE_OK(nfuse_session_get_copied_bytes(session_, &copied_in, &copied_out));
    EXPECT_EQ(copied_in, 0u);
    EXPECT_EQ(copied_out, 0u);
    EXPECT_EQ(std::vector<float>(y, y + 32), expected_);
  }
  EXPECT_EQ(warnings, 0);

  // Misaligned by 4 bytes: still correct, copied, and said once however many runs.
  float* shifted = y + 1;
  ASSERT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, out_dims, 2, shifted, 32 * sizeof(float), &out));
  ASSERT_NFUSE_OK(nfuse_session_bind_output(session_, "y", out));
  nfuse_tensor_release(out);
  for (int run = 0; run < 3; ++run) {
    std::memset(shifted, 0, 32 * sizeof(float));
    ASSERT_NFUSE_OK(nfuse_session_run_bound(session_, nullptr));
    EXPECT_NFUSE_OK(nfuse_session_get_copied_bytes(session_, &copied_in, &copied_out));
    EXPECT_EQ(copied_out, 32 * sizeof(float));
    EXPECT_EQ(std::vector<float>(shifted, shifted + 32), expected_);
  }
  EXPECT_EQ(warnings, 1);

  // Wrong dims: refused by name after the run, nothing written past the buffer.
  const int64_t small_dims[] = {2, 8};
  ASSERT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, small_dims, 2, y, 16 * sizeof(float), &out));
  ASSERT_NFUSE_OK(nfuse_session_bind_output(session_, "y", out));
  nfuse_tensor_release(out);
  EXPECT_NFUSE_CODE(nfuse_session_run_bound(session_, nullptr), NFUSE_INVALID_ARGUMENT, "bound output 'y'");
  // A released handle is refused without being read; a live one under an unknown name by name.
  EXPECT_NFUSE_CODE(nfuse_session_bind_output(session_, "y", out), NFUSE_INVALID_ARGUMENT, "tensor");
  ASSERT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, out_dims, 2, y, 32 * sizeof(float), &out));
  EXPECT_NFUSE_CODE(nfuse_session_bind_output(session_, "nope", out), NFUSE_INVALID_ARGUMENT, "no output named 'nope'");
  nfuse_tensor_release(out);
  EXPECT_NFUSE_OK(nfuse_session_clear_bindings(session_));
  EXPECT_NFUSE_CODE(nfuse_session_run_bound(session_, nullptr), NFUSE_INVALID_ARGUMENT, "not bound");
  // A plain run after bound ones must not write into memory that is no longer bound.
  std::memset(y, 0, 64 + 32 * sizeof(float) - sizeof(float));
  EXPECT_EQ(run(session_), expected_);
  for (int i = 0; i < 32; ++i) EXPECT_EQ(y[i], 0.0f) << i;
  std::free(y);
}

}  // namespace

// Kernels read some weights in place (the depthwise and few-channel convolutions read the graph's
// constants, a binary's packed twins its mapping): a session must keep what it reads alive after
// the application releases the model and deletes the binary's file. Under the sanitizers a
// dangling read is an error; without them freed memory is scribbled on and the outputs must still
// be the first run's.
TEST_F(CApiContext, SessionsKeepTheWeightsTheyReadAfterTheModelAndItsFileAreGone) {
#if defined(__GLIBC__)
  mallopt(M_PERTURB, 0xa5);  // freed memory reads as garbage, so a dangling read shows without ASan too
  struct Restore {
    ~Restore() { mallopt(M_PERTURB, 0); }
  } restore;
#endif
  OnnxBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {1, 3, 12, 12});
  std::vector<float> stem(8 * 3 * 3 * 3), dw(8 * 3 * 3), dw_bias(8);
  for (size_t i = 0; i < stem.size(); ++i) stem[i] = static_cast<float>(static_cast<int>(i % 13) - 6) / 9.0f;
  for (size_t i = 0; i < dw.size(); ++i) dw[i] = static_cast<float>(static_cast<int>(i % 7) - 3) / 5.0f;
  for (size_t i = 0; i < dw_bias.size(); ++i) dw_bias[i] = static_cast<float>(i) / 8.0f - 0.4f;
  b.initializer("stem_w", {8, 3, 3, 3}, stem);
  b.initializer("dw_w", {8, 1, 3, 3}, dw);
  b.initializer("dw_b", {8}, dw_bias);
  nfuse::testing::set_ints_attr(b.node("Conv", {"x", "stem_w"}, {"s"}, "stem"), "pads", {1, 1, 1, 1});
  b.node("Relu", {"s"}, {"r"}, "relu");
  auto& depthwise = b.node("Conv", {"r", "dw_w", "dw_b"}, {"y"}, "depthwise");
  nfuse::testing::set_int_attr(depthwise, "group", 8);
  nfuse::testing::set_ints_attr(depthwise, "pads", {1, 1, 1, 1});
  b.output("y", onnx::TensorProto::FLOAT, {1, 8, 12, 12});
  const std::string bytes = b.bytes();

  std::vector<float> x(3 * 12 * 12);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(static_cast<int>(i % 17) - 8) / 4.0f;
  auto run_conv = [&](nfuse_session* s) {
    const int64_t dims[] = {1, 3, 12, 12};
    nfuse_tensor* in = nullptr;
    EXPECT_NFUSE_OK(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, dims, 4, x.data(), x.size() * sizeof(float), &in));
    const char* names[] = {"x"};
    nfuse_tensor* out = nullptr;
    EXPECT_NFUSE_OK(nfuse_session_run(s, names, &in, 1, nullptr, &out, 1, nullptr));
    std::vector<float> y(8 * 12 * 12, -1.0f);
    void* data = nullptr;
    if (out && !take(nfuse_tensor_get_data(out, &data)).code) std::memcpy(y.data(), data, y.size() * sizeof(float));
    nfuse_tensor_release(out);
    nfuse_tensor_release(in);
    return y;
  };
  for (nfuse_backend backend : {NFUSE_BACKEND_CPU, NFUSE_BACKEND_FUSION}) {
    SCOPED_TRACE(backend == NFUSE_BACKEND_CPU ? "cpu" : "fusion");
    nfuse_model* model = nullptr;
    ASSERT_NFUSE_OK(nfuse_model_load_memory(rt_, bytes.data(), bytes.size(), &model));
    nfuse_session_options* o = nullptr;
    ASSERT_NFUSE_OK(nfuse_session_options_create(&o));
    ASSERT_NFUSE_OK(nfuse_session_options_set_backend(o, backend));
    nfuse_session* from_onnx = nullptr;
    ASSERT_NFUSE_OK(nfuse_session_create(rt_, model, o, &from_onnx));
    nfuse_session_options_release(o);
    const std::vector<float> expected = run_conv(from_onnx);
    ASSERT_NFUSE_OK(nfuse_session_save_context(from_onnx, model, path_.c_str()));
    nfuse_model_release(model);
    EXPECT_EQ(run_conv(from_onnx), expected);
    nfuse_session_release(from_onnx);

    nfuse_model* binary = nullptr;
    ASSERT_NFUSE_OK(nfuse_model_load_file(rt_, path_.c_str(), &binary));
    nfuse_session* from_binary = nullptr;
    ASSERT_NFUSE_OK(nfuse_session_create(rt_, binary, nullptr, &from_binary));
    nfuse_model_release(binary);
    ASSERT_EQ(std::remove(path_.c_str()), 0);
    EXPECT_EQ(run_conv(from_binary), expected);
    nfuse_session_release(from_binary);
  }
}
