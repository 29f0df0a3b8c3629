// The C API of the scheduler: performance modes, request options, fences, asynchronous
// requests, the runtime's trace; and the submit-and-wait that every run goes through.
#include <chrono>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "api/api_objects.h"

using namespace nfuse;

std::shared_ptr<runtime::Executor> nfuse_runtime::executor(int threads) {
  std::shared_ptr<ThreadPool> pool = workers(threads);
  std::lock_guard<std::mutex> lock(workers_mutex_);
  std::shared_ptr<runtime::Executor>& e = executors_[std::max(1, threads)];
  if (!e) {
    runtime::Executor::Options options;
    options.mode = mode_;
    e = std::make_shared<runtime::Executor>(std::move(pool), options);
    e->set_tracing(tracing_);
    e->set_pinning(pinning_);
  }
  return e;
}

std::vector<std::shared_ptr<runtime::Executor>> nfuse_runtime::executors() {
  std::lock_guard<std::mutex> lock(workers_mutex_);
  std::vector<std::shared_ptr<runtime::Executor>> all;
  for (auto& [threads, e] : executors_) all.push_back(e);
  return all;
}

void nfuse_runtime::set_performance_mode(runtime::PerformanceMode mode) {
  {
    std::lock_guard<std::mutex> lock(workers_mutex_);
    mode_ = mode;
  }
  for (auto& e : executors()) e->set_mode(mode);
}

void nfuse_runtime::set_pinning(bool pin) {
  {
    std::lock_guard<std::mutex> lock(workers_mutex_);
    pinning_ = pin;
  }
  for (auto& e : executors()) e->set_pinning(pin);
}

void nfuse_runtime::set_tracing(bool on) {
  {
    std::lock_guard<std::mutex> lock(workers_mutex_);
    tracing_ = on;
  }
  for (auto& e : executors()) e->set_tracing(on);
}

namespace nfuse::api {

Result<std::vector<ir::Tensor>> scheduled_run(nfuse_session& s, std::unique_lock<std::mutex>& lock,
                                              runtime::NamedTensors inputs, std::vector<ir::Tensor*> bound,
                                              runtime::RunCopies* copies, const nfuse_run_options* options) {
  runtime::RequestOptions o = options ? options->options : runtime::RequestOptions();
  o.profile = options && options->profiling ? &s.profile : nullptr;
  o.bound_outputs = std::move(bound);
  o.copies = copies;
  lock.unlock();  // the dispatching thread (this one, or the dispatcher) takes it around each piece
  Result<runtime::RequestPtr> r = s.executor->run(*s.impl, &s.mutex, std::move(inputs), std::move(o));
  lock.lock();
  if (!r.ok()) return r.status();
  NFUSE_RETURN_IF_ERROR_PLAIN((*r)->status());
  return (*r)->take_outputs();
}

namespace {

std::optional<runtime::PerformanceMode> to_mode(const nfuse_performance_mode& mode) {
  switch (enum_bits(mode)) {
    case NFUSE_PERFORMANCE_BURST: return runtime::PerformanceMode::kBurst;
    case NFUSE_PERFORMANCE_SUSTAINED_HIGH_PERFORMANCE: return runtime::PerformanceMode::kSustainedHighPerformance;
    case NFUSE_PERFORMANCE_BALANCED: return runtime::PerformanceMode::kBalanced;
    case NFUSE_PERFORMANCE_POWER_SAVER: return runtime::PerformanceMode::kPowerSaver;
    default: return std::nullopt;
  }
}

Status check_mode(const char* fn, const nfuse_performance_mode& mode) {
  if (!to_mode(mode))
    return invalid_argument(std::string(fn) + ": unknown performance mode " + std::to_string(enum_bits(mode)));
  return ok_status();
}

Status settle_fence(const char* fn, nfuse_fence* fence, bool signal, const char* message) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "fence", fence));
  if (fence->fence->producer() != 0)
    return invalid_argument(std::string(fn) + ": fence '" + fence->fence->label() +
                            "' belongs to a request: the runtime settles it when the request does");
  const bool changed = signal ? fence->fence->signal() : fence->fence->fail(unavailable(message));
  if (!changed)
    return invalid_argument(std::string(fn) + ": fence '" + fence->fence->label() + "' is already " +
                            runtime::fence_state_name(fence->fence->state()));
  return ok_status();
}

}  // namespace
}  // namespace nfuse::api

using api::check_handle;
using api::check_out;
using api::guard;

extern "C" {

nfuse_status* nfuse_runtime_set_performance_mode(nfuse_runtime* runtime, nfuse_performance_mode mode) {
  constexpr const char* fn = "nfuse_runtime_set_performance_mode";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "runtime", runtime));
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_mode(fn, mode));
    runtime->set_performance_mode(*api::to_mode(mode));
    return ok_status();
  });
}

nfuse_status* nfuse_runtime_set_thread_pinning(nfuse_runtime* runtime, int enabled) {
  constexpr const char* fn = "nfuse_runtime_set_thread_pinning";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "runtime", runtime));
    runtime->set_pinning(enabled != 0);
    return ok_status();
  });
}

nfuse_status* nfuse_runtime_set_tracing(nfuse_runtime* runtime, int enabled) {
  constexpr const char* fn = "nfuse_runtime_set_tracing";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "runtime", runtime));
    runtime->set_tracing(enabled != 0);
    return ok_status();
  });
}

nfuse_status* nfuse_runtime_trace(nfuse_runtime* runtime, const char** json) {
  constexpr const char* fn = "nfuse_runtime_trace";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "runtime", runtime));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "json", json));
    nlohmann::json merged = {{"displayTimeUnit", "ms"}, {"traceEvents", nlohmann::json::array()}};
    int pid = 1;
    for (const auto& e : runtime->executors()) {
      nlohmann::json one = e->trace_json("nfuse runtime (" + std::to_string(pid) + ")");
      for (nlohmann::json& event : one["traceEvents"]) {
        event["pid"] = pid;
        merged["traceEvents"].push_back(std::move(event));
      }
      ++pid;
    }
    std::lock_guard<std::mutex> lock(runtime->log_mutex);
    runtime->trace_json = merged.dump();
    *json = runtime->trace_json.c_str();
    return ok_status();
  });
}

nfuse_status* nfuse_run_options_set_priority(nfuse_run_options* options, nfuse_priority priority) {
  constexpr const char* fn = "nfuse_run_options_set_priority";
  return api::set(fn, options, [&](runtime::RequestOptions& o) -> Status {
    const long long bits = api::enum_bits(priority);
    if (bits < NFUSE_PRIORITY_LOW || bits > NFUSE_PRIORITY_REALTIME)
      return invalid_argument(std::string(fn) + ": unknown priority " + std::to_string(bits));
    o.priority = static_cast<runtime::Priority>(bits);
    return ok_status();
  });
}

nfuse_status* nfuse_run_options_set_deadline(nfuse_run_options* options, double ms, int drop_if_late) {
  constexpr const char* fn = "nfuse_run_options_set_deadline";
  return api::set(fn, options, [&](runtime::RequestOptions& o) -> Status {
    if (!std::isfinite(ms) || ms < 0)
      return invalid_argument(std::string(fn) + ": the deadline must be a finite number of ms >= 0 (0: none), not " +
                              std::to_string(ms));
    o.deadline_ms = ms;
    o.drop_if_late = drop_if_late != 0;
    return ok_status();
  });
}

nfuse_status* nfuse_run_options_set_performance_mode(nfuse_run_options* options, nfuse_performance_mode mode) {
  constexpr const char* fn = "nfuse_run_options_set_performance_mode";
  return api::set(fn, options, [&](runtime::RequestOptions& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_mode(fn, mode));
    o.mode = api::to_mode(mode);
    return ok_status();
  });
}

nfuse_status* nfuse_run_options_add_wait_fence(nfuse_run_options* options, const nfuse_fence* fence) {
  constexpr const char* fn = "nfuse_run_options_add_wait_fence";
  return api::set(fn, options, [&](runtime::RequestOptions& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "fence", fence));
    o.wait_for.push_back(fence->fence);
    return ok_status();
  });
}

nfuse_status* nfuse_run_options_clear_wait_fences(nfuse_run_options* options) {
  return api::set("nfuse_run_options_clear_wait_fences", options, [&](runtime::RequestOptions& o) -> Status {
    o.wait_for.clear();
    return ok_status();
  });
}

nfuse_status* nfuse_run_options_set_label(nfuse_run_options* options, const char* label) {
  constexpr const char* fn = "nfuse_run_options_set_label";
  return api::set(fn, options, [&](runtime::RequestOptions& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "label", label));
    o.label = label;
    return ok_status();
  });
}

nfuse_status* nfuse_fence_create(const char* label, nfuse_fence** out) {
  constexpr const char* fn = "nfuse_fence_create";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    auto f = std::make_unique<nfuse_fence>();
    f->fence = std::make_shared<runtime::Fence>(label && *label ? label : "caller fence");
    api::publish(std::move(f), out);
    return ok_status();
  });
}

void nfuse_fence_release(nfuse_fence* fence) { api::retire(fence); }

nfuse_status* nfuse_fence_signal(nfuse_fence* fence) {
  constexpr const char* fn = "nfuse_fence_signal";
  return guard(fn, [&]() -> Status { return api::settle_fence(fn, fence, true, nullptr); });
}

nfuse_status* nfuse_fence_fail(nfuse_fence* fence, const char* message) {
  constexpr const char* fn = "nfuse_fence_fail";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "message", message));
    return api::settle_fence(fn, fence, false, message);
  });
}

nfuse_status* nfuse_fence_wait(const nfuse_fence* fence, int64_t timeout_us, int* settled) {
  constexpr const char* fn = "nfuse_fence_wait";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "fence", fence));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "settled", settled));
    const runtime::Fence::State state =
        timeout_us < 0 ? fence->fence->wait() : fence->fence->wait_for(std::chrono::microseconds(timeout_us));
    *settled = state != runtime::Fence::State::kPending;
    if (state == runtime::Fence::State::kFailed) return fence->fence->cause();
    return ok_status();
  });
}

nfuse_status* nfuse_session_submit(nfuse_session* session, const char* const* input_names,
                                   const nfuse_tensor* const* inputs, size_t input_count,
                                   const nfuse_run_options* run_options, nfuse_request_done_fn done, void* user_data,
                                   nfuse_request** out) {
  constexpr const char* fn = "nfuse_session_submit";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    if (run_options) NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "run_options", run_options));
    runtime::NamedTensors named;
    NFUSE_RETURN_IF_ERROR_PLAIN(api::named_inputs(fn, named, input_names, inputs, input_count));
    std::lock_guard<std::mutex> lock(session->mutex);
    runtime::RequestOptions o = run_options ? run_options->options : runtime::RequestOptions();
    o.profile = run_options && run_options->profiling ? &session->profile : nullptr;
    if (done)
      o.on_done = [done, user_data](const runtime::Request& r) { done(user_data, api::to_c_code(r.status().code())); };
    auto handle = std::make_unique<nfuse_request>();
    NFUSE_ASSIGN_OR_RETURN(handle->request,
                           session->executor->submit(*session->impl, &session->mutex, std::move(named), std::move(o)));
    api::publish(std::move(handle), out);
    return ok_status();
  });
}

void nfuse_request_release(nfuse_request* request) { api::retire(request); }

nfuse_status* nfuse_request_wait(nfuse_request* request) {
  constexpr const char* fn = "nfuse_request_wait";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "request", request));
    return request->request->wait();
  });
}

nfuse_status* nfuse_request_fence(const nfuse_request* request, nfuse_fence** out) {
  constexpr const char* fn = "nfuse_request_fence";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "request", request));
    auto f = std::make_unique<nfuse_fence>();
    f->fence = request->request->fence();
    api::publish(std::move(f), out);
    return ok_status();
  });
}

nfuse_status* nfuse_request_output(nfuse_request* request, size_t index, nfuse_tensor** out) {
  constexpr const char* fn = "nfuse_request_output";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "request", request));
    const runtime::Request& r = *request->request;
    if (r.fence()->state() == runtime::Fence::State::kPending)
      return invalid_argument(std::string(fn) + ": request " + std::to_string(r.id()) +
                              " has not finished (nfuse_request_wait first)");
    NFUSE_RETURN_IF_ERROR_PLAIN(r.status());
    if (index >= r.outputs().size())
      return invalid_argument(std::string(fn) + ": output index " + std::to_string(index) + " of " +
                              std::to_string(r.outputs().size()) + " outputs");
    auto t = std::make_unique<nfuse_tensor>();
    t->tensor = r.outputs()[index];
    api::publish(std::move(t), out);
    return ok_status();
  });
}

nfuse_status* nfuse_request_stats(nfuse_request* request, const char** json) {
  constexpr const char* fn = "nfuse_request_stats";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "request", request));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "json", json));
    const runtime::Request& r = *request->request;
    if (r.fence()->state() == runtime::Fence::State::kPending)
      return invalid_argument(std::string(fn) + ": request " + std::to_string(r.id()) + " has not settled");
    const runtime::RequestTimes& t = r.times();
    const Status status = r.status();
    nlohmann::json j = {{"id", r.id()},
                        {"priority", runtime::priority_name(r.priority())},
                        {"status", status.ok() ? "ok" : status.to_string()},
                        {"queue_wait_ms", t.units ? t.queue_wait_ms() : 0.0},
                        {"latency_ms", t.latency_ms()},
                        {"busy_ms", t.busy_ms},
                        {"units", t.units},
                        {"longest_unit_ms", t.longest_unit_ms},
                        {"missed_deadline", t.missed_deadline}};
    if (status.ok()) j["run"] = nlohmann::json::parse(r.stats().to_json());
    request->stats_json = j.dump();
    *json = request->stats_json.c_str();
    return ok_status();
  });
}

}  // extern "C"
