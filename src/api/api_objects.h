// What the C API's opaque handles are, and the checks every entry point makes: a handle is
// valid only while it is registered as live (so a released or foreign pointer is refused without
// being dereferenced), and every body runs under guard(), which turns exceptions into statuses.
#pragma once

#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <set>
#include <string>
#include <type_traits>
#include <unordered_set>
#include <vector>

#include "backends/run_profile.h"
#include "core/thread_pool.h"
#include "ir/graph.h"
#include "ir/tensor.h"
#include "nfuse/nfuse.h"
#include "nfuse/status.h"
#include "quant/quantize_model.h"
#include "runtime/builtins.h"
#include "runtime/context_model.h"
#include "runtime/executor.h"
#include "runtime/session.h"

struct nfuse_status {
  nfuse_status_code code = NFUSE_OK;
  std::string message;
};

struct nfuse_runtime {
  std::mutex log_mutex;
  nfuse_log_level log_level = NFUSE_LOG_ERROR;
  nfuse_log_fn log_fn = nullptr;
  void* log_user = nullptr;
  std::vector<std::string> backend_names;
  nfuse::context::CompatMode context_compat = nfuse::context::CompatMode::kPermissive;

  void log(nfuse_log_level level, const std::string& message);
  // The intra-op workers of this thread count that every session of this runtime runs on
  // (created on first use; sessions keep them alive past the runtime's release).
  std::shared_ptr<nfuse::ThreadPool> workers(int threads);
  // The scheduler of the sessions of this thread count (created with its workers; sessions keep
  // it alive past the runtime's release, as they do the workers).
  std::shared_ptr<nfuse::runtime::Executor> executor(int threads);
  // Every executor made so far, by thread count.
  std::vector<std::shared_ptr<nfuse::runtime::Executor>> executors();
  void set_performance_mode(nfuse::runtime::PerformanceMode mode);
  void set_tracing(bool on);
  void set_pinning(bool pin);
  std::string trace_json;  // the text nfuse_runtime_trace last handed out

 private:
  std::mutex workers_mutex_;
  std::map<int, std::shared_ptr<nfuse::ThreadPool>> workers_;
  std::map<int, std::shared_ptr<nfuse::runtime::Executor>> executors_;
  nfuse::runtime::PerformanceMode mode_ = nfuse::runtime::PerformanceMode::kSustainedHighPerformance;
  bool tracing_ = false;
  std::optional<bool> pinning_;
};

// The model's serialized bytes are kept so every session imports its own graph; the graph parsed
// at load (which proved the bytes valid) goes to the first session.
struct nfuse_model {
  // A context binary (`nfuse compile`): every session's graph comes from it, its weights read in
  // place from the one mapping. Null for an ONNX model.
  std::shared_ptr<const nfuse::runtime::ContextModel> context;
  std::string bytes;
  std::string source_name;  // the file name it was loaded from ("" from memory)
  std::string base_dir;
  bool external_data = true;
  // Handing the first graph to a session is no observable change: a const model may do it.
  mutable std::mutex mutex;
  mutable std::unique_ptr<nfuse::ir::Graph> first_graph;
};

struct nfuse_session_options {
  nfuse::runtime::SessionOptions options;
  // Plans built at creation for these input dims (nfuse_session_options_set_input_shape).
  std::map<std::string, std::vector<int64_t>> input_shapes;
};

struct nfuse_quantize_options {
  nfuse::quant::QuantizeModelOptions options;
  nfuse::quant::QuantizeModelResult result;  // of the last nfuse_quantize with these options
};

struct nfuse_run_options {
  bool profiling = false;
  nfuse::runtime::RequestOptions options;  // priority, deadline, mode, fences, label
};

struct nfuse_fence {
  nfuse::runtime::FencePtr fence;
};

struct nfuse_request {
  nfuse::runtime::RequestPtr request;
  std::string stats_json;  // the text nfuse_request_stats last handed out
};

struct nfuse_tensor {
  nfuse::ir::Tensor tensor;
};

// Per input or output: what the metadata calls return, kept as strings the session owns.
struct nfuse_io_info {
  std::string name;
  nfuse_dtype dtype = NFUSE_DTYPE_UNDEFINED;
  bool rank_known = false;
  std::vector<int64_t> dims;         // -1 where symbolic
  std::vector<std::string> symbols;  // "" where static or unnamed
};

struct nfuse_session {
  // Its queued requests are cancelled (and one in flight finished) before it goes.
  ~nfuse_session() {
    if (executor && impl) executor->forget(*impl);
  }
  // Guards the session's state against concurrent calls; the dispatcher holds it around each
  // piece of a run, and a waiting run does not.
  std::mutex mutex;
  nfuse_runtime* runtime = nullptr;
  std::unique_ptr<nfuse::runtime::Session> impl;
  // Where its runs are scheduled (the runtime's, for the session's thread count).
  std::shared_ptr<nfuse::runtime::Executor> executor;
  std::vector<nfuse_io_info> inputs, outputs;
  std::map<std::string, std::vector<int64_t>> last_dims;  // of the last successful run
  // The JSON texts last handed out, one each: each stays valid until its own function runs again.
  std::string report_json, profile_json, traffic_json, stats_json, trace_json;
  nfuse::backends::RunProfile profile;  // of the runs made with profiling on
  // Zero-copy I/O: caller memory bound to inputs (by name) and outputs (by output index); kept
  // across runs until rebound or cleared. What the last bound run copied, and the outputs whose
  // copy was already logged (once per tensor).
  std::map<std::string, nfuse::ir::Tensor> bound_inputs;
  std::vector<nfuse::ir::Tensor> bound_outputs;  // empty tensor: not bound
  nfuse::runtime::RunCopies last_copies;
  std::set<std::string> copy_logged;
};

namespace nfuse::api {

// The value a C caller passed for an enum, read as its bits: a C caller may pass any int, and an
// enum-typed load of one outside the enum's values is undefined behaviour in C++. Take enum
// arguments by reference into the checks (copying one is such a load) and switch on this.
template <typename E>
long long enum_bits(const E& value) {
  std::underlying_type_t<E> raw;
  std::memcpy(&raw, &value, sizeof raw);
  return static_cast<long long>(static_cast<std::make_signed_t<decltype(raw)>>(raw));  // -3 stays -3
}

// Live handles of one type. A handle is registered when created and removed when released, so
// use after release and pointers that were never handles are refused by a lookup, not a crash.
template <typename T>
class LiveSet {
 public:
  void add(const T* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(p);
  }
  // False when `p` was not live.
  bool remove(const T* p) {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.erase(p) != 0;
  }
  bool contains(const T* p) const {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.count(p) != 0;
  }

 private:
  mutable std::mutex mutex_;
  std::unordered_set<const T*> live_;
};

template <typename T>
LiveSet<T>& live() {
  static LiveSet<T>* set = new LiveSet<T>();  // never destroyed: handles may outlive statics
  return *set;
}

// Registers a new handle and stores it in *out.
template <typename T>
void publish(std::unique_ptr<T> object, T** out) {
  live<T>().add(object.get());
  *out = object.release();
}

// Unregisters and deletes a handle; NULL and unknown pointers are ignored.
template <typename T>
void retire(T* p) {
  if (p && live<T>().remove(p)) delete p;
}

// Status -> nfuse_status* (NULL for ok). Never throws: without memory for the message it returns a
// static out-of-memory status that nfuse_status_release knows not to free.
nfuse_status* to_c(const Status& status);
nfuse_status_code to_c_code(StatusCode code);
nfuse_status* make_status(nfuse_status_code code, const std::string& message);
nfuse_status* out_of_memory_status();
bool is_static_status(const nfuse_status* status);

// kInvalidArgument "<fn>: <what> is NULL" unless `p` is non-null; for handles also that it is live.
template <typename T>
Status check_handle(const char* fn, const char* what, const T* p) {
  if (!p) return invalid_argument(std::string(fn) + ": " + what + " is NULL");
  if (!live<T>().contains(p))
    return invalid_argument(std::string(fn) + ": " + what + " is not a live handle (released, or never created)");
  return ok_status();
}
inline Status check_out(const char* fn, const char* what, const void* p) {
  if (!p) return invalid_argument(std::string(fn) + ": " + what + " is NULL");
  return ok_status();
}

// Runs `body` (returning Status); any exception becomes a status naming `fn`.
template <typename Fn>
nfuse_status* guard(const char* fn, Fn&& body) noexcept {
  try {
    register_builtins();  // once per process; an atomic load after that
    Status s = body();
    if (s.ok()) return nullptr;
    return to_c(s.message().rfind(fn, 0) == 0 ? s : s.with_context(fn));
  } catch (const std::bad_alloc&) {
    return out_of_memory_status();
  } catch (const std::exception& e) {
    return make_status(NFUSE_INTERNAL, std::string(fn) + ": " + e.what());
  } catch (...) {
    return make_status(NFUSE_INTERNAL, std::string(fn) + ": unknown exception");
  }
}

// A graph of its own for a new session (the model's bytes imported again after the first).
Result<std::unique_ptr<ir::Graph>> take_graph(const nfuse_model& model);

// The inputs of a run or request by name, checked: NULL arrays, names or handles, repeats.
Status named_inputs(const char* fn, runtime::NamedTensors& named, const char* const* names,
                    const nfuse_tensor* const* inputs, size_t count);

// A run through the session's scheduler (a run is a submit and a wait). `lock` holds the
// session's mutex on entry and on return; it is released while the request waits, since the
// dispatcher takes it around each piece of work.
Result<std::vector<ir::Tensor>> scheduled_run(nfuse_session& s, std::unique_lock<std::mutex>& lock,
                                              runtime::NamedTensors inputs, std::vector<ir::Tensor*> bound,
                                              runtime::RunCopies* copies, const nfuse_run_options* options);
// The index of the input or output (`what`) called `name` in `list`; kInvalidArgument naming it.
Result<size_t> io_index(const char* fn, const std::vector<nfuse_io_info>& list, const char* name, const char* what);

// The body of a getter: `handle` must be live and `out` non-NULL; then *out = read(*handle).
template <typename H, typename T, typename Read>
nfuse_status* get(const char* fn, const char* what, const H* handle, T* out, Read read) noexcept {
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, what, handle));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = read(*handle);
    return ok_status();
  });
}

// The body of an options setter: `handle` must be live; then `apply(handle->options)`.
// `rank` dims from the caller, checked: kInvalidArgument for NULL dims of a ranked tensor,
// negative dims and products that overflow size_t bytes (*bytes_out, for `dtype`).
Result<std::vector<int64_t>> checked_dims(const char* fn, const nfuse_dtype& dtype, const int64_t* dims, size_t rank,
                                          size_t* bytes_out);

template <typename H, typename Apply>
nfuse_status* set(const char* fn, H* handle, Apply apply) noexcept {
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "options", handle));
    return apply(handle->options);
  });
}

// The body of a create call without arguments: a new T, set up by `init`, published to *out.
template <typename T, typename Init>
nfuse_status* create(const char* fn, T** out, Init init) noexcept {
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    auto object = std::make_unique<T>();
    init(*object);
    publish(std::move(object), out);
    return ok_status();
  });
}

nfuse_dtype to_c(ir::DType dtype);
// kUndefined for values that are not an nfuse_dtype.
ir::DType from_c(const nfuse_dtype& dtype);

}  // namespace nfuse::api
