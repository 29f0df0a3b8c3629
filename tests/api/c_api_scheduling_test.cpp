// The scheduler through the C API (API level 2): asynchronous requests with priorities, fences
// between requests and from the caller, deadlines, performance modes, per-request statistics,
// the runtime's trace; and the bad-input contract for each new handle and enum.
#include <nfuse/nfuse.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "api/c_api_checks.h"
#include "support/onnx_builder.h"

namespace {

using nfuse::testing::OnnxBuilder;
using nfuse_test::Checked;
using nfuse_test::take;

// y = -|x| over `layers` Abs/Neg pairs (the sign of the last pair wins): x f32 [2, 4].
std::string abs_neg_model(int layers) {
  OnnxBuilder b;
  b.input("x", onnx::TensorProto::FLOAT, {2, 4});
  std::string prev = "x";
  for (int i = 0; i < layers; ++i) {
    const std::string a = "a" + std::to_string(i), n = "n" + std::to_string(i);
    b.node("Abs", {prev}, {a}, "abs" + std::to_string(i));
    b.node("Neg", {a}, {n}, "neg" + std::to_string(i));
    prev = n;
  }
  b.node("Identity", {prev}, {"y"}, "out");
  b.output("y", onnx::TensorProto::FLOAT, {2, 4});
  return b.bytes();
}

class CApiScheduling : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(take(nfuse_runtime_create(&rt_)).code, NFUSE_OK);
    for (int layers : {1, 3}) {
      const std::string bytes = abs_neg_model(layers);
      nfuse_model* m = nullptr;
      Checked c = take(nfuse_model_load_memory(rt_, bytes.data(), bytes.size(), &m));
      ASSERT_EQ(c.code, NFUSE_OK) << c.message;
      nfuse_session_options* o = nullptr;
      ASSERT_EQ(take(nfuse_session_options_create(&o)).code, NFUSE_OK);
      ASSERT_EQ(take(nfuse_session_options_set_backend(o, NFUSE_BACKEND_CPU)).code, NFUSE_OK);
      ASSERT_EQ(take(nfuse_session_options_set_optimization(o, 0)).code, NFUSE_OK);
      nfuse_session* s = nullptr;
      c = take(nfuse_session_create(rt_, m, o, &s));
      ASSERT_EQ(c.code, NFUSE_OK) << c.message;
      nfuse_session_options_release(o);
      models_.push_back(m);
      sessions_.push_back(s);
    }
    const int64_t dims[] = {2, 4};
    ASSERT_EQ(take(nfuse_tensor_wrap(NFUSE_DTYPE_FLOAT32, dims, 2, x_.data(), x_.size() * sizeof(float), &in_)).code,
              NFUSE_OK);
  }
  void TearDown() override {
    nfuse_tensor_release(in_);
    for (nfuse_session* s : sessions_) nfuse_session_release(s);
    for (nfuse_model* m : models_) nfuse_model_release(m);
    nfuse_runtime_release(rt_);
  }
  nfuse_request* submit(size_t session, const nfuse_run_options* o) {
    const char* names[] = {"x"};
    nfuse_request* r = nullptr;
    EXPECT_NFUSE_OK(nfuse_session_submit(sessions_[session], names, &in_, 1, o, nullptr, nullptr, &r));
    return r;
  }
  void expect_minus_abs(nfuse_request* r) {
    nfuse_tensor* y = nullptr;
    EXPECT_NFUSE_OK(nfuse_request_output(r, 0, &y));
    void* data = nullptr;
    EXPECT_NFUSE_OK(nfuse_tensor_get_data(y, &data));
    for (size_t i = 0; i < x_.size(); ++i) EXPECT_EQ(static_cast<float*>(data)[i], -std::abs(x_[i])) << i;
    nfuse_tensor_release(y);
  }

  std::vector<float> x_ = {-2, -1, 0, 1, 2, 3, -4, 5};
  nfuse_tensor* in_ = nullptr;
  nfuse_runtime* rt_ = nullptr;
  std::vector<nfuse_model*> models_;
  std::vector<nfuse_session*> sessions_;
};

void on_done(void* user_data, nfuse_status_code code) {
  if (code == NFUSE_OK) ++*static_cast<std::atomic<int>*>(user_data);
}

TEST_F(CApiScheduling, SubmittedRequestsRunWaitAndReport) {
  nfuse_run_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_run_options_create(&o));
  EXPECT_NFUSE_OK(nfuse_run_options_set_priority(o, NFUSE_PRIORITY_HIGH));
  EXPECT_NFUSE_OK(nfuse_run_options_set_deadline(o, 10000.0, 0));
  std::atomic<int> done{0};
  const char* names[] = {"x"};
  std::vector<nfuse_request*> requests;
  for (int i = 0; i < 6; ++i) {
    nfuse_request* r = nullptr;
    EXPECT_NFUSE_OK(nfuse_session_submit(sessions_[static_cast<size_t>(i % 2)], names, &in_, 1, i % 3 ? o : nullptr,
                                         on_done, &done, &r));
    requests.push_back(r);
  }
  for (nfuse_request* r : requests) {
    EXPECT_NFUSE_OK(nfuse_request_wait(r));
    expect_minus_abs(r);
    const char* json = nullptr;
    EXPECT_NFUSE_OK(nfuse_request_stats(r, &json));
    const std::string s = json;
    EXPECT_NE(s.find("\"status\":\"ok\""), std::string::npos) << s;
    EXPECT_NE(s.find("\"queue_wait_ms\":"), std::string::npos) << s;
    EXPECT_NE(s.find("\"missed_deadline\":false"), std::string::npos) << s;
    EXPECT_NE(s.find("\"backend\":\"cpu\""), std::string::npos) << s;
    nfuse_request_release(r);
  }
  for (int i = 0; i < 2000 && done.load() < 6; ++i)  // callbacks run just after the fence
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(done.load(), 6);
  nfuse_run_options_release(o);
}

// A request waiting on a caller fence runs only after the signal; one waiting on that request's
// fence runs after it; failing a caller fence fails its waiter with the message.
TEST_F(CApiScheduling, FencesFromTheCallerAndFromRequests) {
  nfuse_fence* frame = nullptr;
  EXPECT_NFUSE_OK(nfuse_fence_create("frame 1", &frame));
  nfuse_run_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_run_options_create(&o));
  EXPECT_NFUSE_OK(nfuse_run_options_add_wait_fence(o, frame));
  nfuse_request* first = submit(1, o);
  nfuse_fence* first_done = nullptr;
  EXPECT_NFUSE_OK(nfuse_request_fence(first, &first_done));
  nfuse_run_options* o2 = nullptr;
  EXPECT_NFUSE_OK(nfuse_run_options_create(&o2));
  EXPECT_NFUSE_OK(nfuse_run_options_add_wait_fence(o2, first_done));
  nfuse_request* second = submit(0, o2);
  int settled = 1;
  EXPECT_NFUSE_OK(nfuse_fence_wait(first_done, 20000, &settled));
  EXPECT_EQ(settled, 0);  // the frame is not signalled: nothing ran
  EXPECT_NFUSE_CODE(nfuse_request_output(first, 0, nullptr), NFUSE_INVALID_ARGUMENT, "out is NULL");
  nfuse_tensor* early = nullptr;
  EXPECT_NFUSE_CODE(nfuse_request_output(first, 0, &early), NFUSE_INVALID_ARGUMENT, "has not finished");
  EXPECT_NFUSE_CODE(nfuse_fence_signal(first_done), NFUSE_INVALID_ARGUMENT, "belongs to a request");
  EXPECT_NFUSE_CODE(nfuse_fence_fail(first_done, "no"), NFUSE_INVALID_ARGUMENT, "belongs to a request");
  EXPECT_NFUSE_OK(nfuse_fence_signal(frame));
  EXPECT_NFUSE_CODE(nfuse_fence_signal(frame), NFUSE_INVALID_ARGUMENT, "already signalled");
  EXPECT_NFUSE_OK(nfuse_request_wait(second));
  EXPECT_NFUSE_OK(nfuse_fence_wait(first_done, -1, &settled));
  EXPECT_EQ(settled, 1);
  expect_minus_abs(first);
  expect_minus_abs(second);

  nfuse_fence* lost = nullptr;
  EXPECT_NFUSE_OK(nfuse_fence_create("camera", &lost));
  EXPECT_NFUSE_OK(nfuse_run_options_clear_wait_fences(o));
  EXPECT_NFUSE_OK(nfuse_run_options_add_wait_fence(o, lost));
  nfuse_request* orphan = submit(0, o);
  EXPECT_NFUSE_OK(nfuse_fence_fail(lost, "camera unplugged"));
  EXPECT_NFUSE_CODE(nfuse_request_wait(orphan), NFUSE_UNAVAILABLE, "camera unplugged");
  const char* json = nullptr;
  EXPECT_NFUSE_OK(nfuse_request_stats(orphan, &json));
  EXPECT_NE(std::string(json).find("camera unplugged"), std::string::npos) << json;

  for (nfuse_request* r : {first, second, orphan}) nfuse_request_release(r);
  for (nfuse_fence* f : {frame, first_done, lost}) nfuse_fence_release(f);
  nfuse_run_options_release(o);
  nfuse_run_options_release(o2);
}

TEST_F(CApiScheduling, ModesTracingAndSynchronousRunsShareTheScheduler) {
  EXPECT_NFUSE_OK(nfuse_runtime_set_tracing(rt_, 1));
  for (nfuse_performance_mode mode : {NFUSE_PERFORMANCE_POWER_SAVER, NFUSE_PERFORMANCE_BALANCED,
                                      NFUSE_PERFORMANCE_BURST, NFUSE_PERFORMANCE_SUSTAINED_HIGH_PERFORMANCE}) {
    EXPECT_NFUSE_OK(nfuse_runtime_set_performance_mode(rt_, mode));
    const char* names[] = {"x"};
    nfuse_tensor* out = nullptr;
    EXPECT_NFUSE_OK(nfuse_session_run(sessions_[1], names, &in_, 1, nullptr, &out, 1, nullptr));
    nfuse_tensor_release(out);
  }
  const char* trace = nullptr;
  EXPECT_NFUSE_OK(nfuse_runtime_trace(rt_, &trace));
  const std::string t = trace;
  EXPECT_NE(t.find("\"dispatcher\""), std::string::npos);
  EXPECT_NE(t.find("queued requests"), std::string::npos);
  EXPECT_NE(t.find("\"cat\":\"request\""), std::string::npos);
  EXPECT_NE(t.find("\"cat\":\"unit\""), std::string::npos);
}

TEST_F(CApiScheduling, BadArgumentsAreRefusedByName) {
  nfuse_run_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_run_options_create(&o));
  EXPECT_NFUSE_CODE(nfuse_run_options_set_priority(o, static_cast<nfuse_priority>(9)), NFUSE_INVALID_ARGUMENT,
                    "unknown priority 9");
  EXPECT_NFUSE_CODE(nfuse_run_options_set_priority(o, static_cast<nfuse_priority>(-3)), NFUSE_INVALID_ARGUMENT,
                    "unknown priority -3");  // a C caller may pass any int: refused, no enum-typed load
  EXPECT_NFUSE_CODE(nfuse_run_options_set_deadline(o, -1.0, 0), NFUSE_INVALID_ARGUMENT, "deadline");
  EXPECT_NFUSE_CODE(nfuse_run_options_set_performance_mode(o, static_cast<nfuse_performance_mode>(7)),
                    NFUSE_INVALID_ARGUMENT, "unknown performance mode 7");
  EXPECT_NFUSE_CODE(nfuse_runtime_set_performance_mode(rt_, static_cast<nfuse_performance_mode>(-1)),
                    NFUSE_INVALID_ARGUMENT, "unknown performance mode");
  EXPECT_NFUSE_CODE(nfuse_run_options_add_wait_fence(o, nullptr), NFUSE_INVALID_ARGUMENT, "fence is NULL");
  nfuse_fence* f = nullptr;
  EXPECT_NFUSE_OK(nfuse_fence_create(nullptr, &f));
  nfuse_fence_release(f);
  EXPECT_NFUSE_CODE(nfuse_run_options_add_wait_fence(o, f), NFUSE_INVALID_ARGUMENT, "not a live handle");
  EXPECT_NFUSE_CODE(nfuse_fence_signal(f), NFUSE_INVALID_ARGUMENT, "not a live handle");
  int settled = 0;
  EXPECT_NFUSE_CODE(nfuse_fence_wait(nullptr, 0, &settled), NFUSE_INVALID_ARGUMENT, "fence is NULL");
  const char* names[] = {"x"};
  nfuse_request* r = nullptr;
  EXPECT_NFUSE_CODE(nfuse_session_submit(nullptr, names, &in_, 1, nullptr, nullptr, nullptr, &r),
                    NFUSE_INVALID_ARGUMENT, "session is NULL");
  EXPECT_NFUSE_CODE(nfuse_session_submit(sessions_[0], names, &in_, 1, nullptr, nullptr, nullptr, nullptr),
                    NFUSE_INVALID_ARGUMENT, "out is NULL");
  const char* wrong[] = {"nope"};
  r = nullptr;
  EXPECT_NFUSE_OK(nfuse_session_submit(sessions_[0], wrong, &in_, 1, nullptr, nullptr, nullptr, &r));
  EXPECT_NFUSE_CODE(nfuse_request_wait(r), NFUSE_INVALID_ARGUMENT, "no input named 'nope'");
  nfuse_request_release(r);
  EXPECT_NFUSE_CODE(nfuse_request_wait(r), NFUSE_INVALID_ARGUMENT, "not a live handle");
  nfuse_run_options_release(o);
}

// Releasing a session cancels what it has queued; a released request handle is refused.
TEST_F(CApiScheduling, ReleasingASessionCancelsItsQueuedRequests) {
  nfuse_fence* never = nullptr;
  EXPECT_NFUSE_OK(nfuse_fence_create("never", &never));
  nfuse_run_options* o = nullptr;
  EXPECT_NFUSE_OK(nfuse_run_options_create(&o));
  EXPECT_NFUSE_OK(nfuse_run_options_add_wait_fence(o, never));
  nfuse_request* r = submit(0, o);
  nfuse_session_release(sessions_[0]);
  sessions_.erase(sessions_.begin());
  EXPECT_NFUSE_CODE(nfuse_request_wait(r), NFUSE_CANCELLED, "session was released");
  nfuse_request_release(r);
  nfuse_fence_release(never);
  nfuse_run_options_release(o);
}

}  // namespace
