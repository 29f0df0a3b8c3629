// nfuse C++ API: header-only RAII over the C API (nfuse.h). C++17. Nothing here throws: every
// fallible call returns nfuse::Status or nfuse::Result<T>; handles are move-only and release
// their C object when destroyed.
//
//   nfuse::Runtime rt = nfuse::Runtime::create().value();
//   nfuse::Model model = nfuse::Model::load(rt, "mobilenet.onnx").value();
//   nfuse::Session s = nfuse::Session::create(rt, model, nfuse::SessionOptions().backend(NFUSE_BACKEND_AUTO)).value();
//   nfuse::Tensor x = nfuse::Tensor::wrap(NFUSE_DTYPE_FLOAT32, {1, 3, 224, 224}, pixels, bytes).value();
//   auto out = s.run({{"input", &x}});   // Result<std::vector<nfuse::Tensor>>
#ifndef NFUSE_NFUSE_HPP_
#define NFUSE_NFUSE_HPP_

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "nfuse/nfuse.h"

// The inline namespace keeps these names apart (in mangling) from the library's internal
// nfuse::Status, so a program may link both; one translation unit includes only one of them.
namespace nfuse {
inline namespace api_v1 {
namespace api_detail {
template <typename T, void (*Release)(T*)>
class Handle {
 public:
  Handle() = default;
  explicit Handle(T* p) : p_(p) {}
  Handle(Handle&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      Release(p_);
      p_ = std::exchange(o.p_, nullptr);
    }
    return *this;
  }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  ~Handle() { Release(p_); }
  T* get() const { return p_; }
  explicit operator bool() const { return p_ != nullptr; }

 private:
  T* p_ = nullptr;
};
}  // namespace api_detail

// A code and a message; ok() when the C call returned NULL.
class Status {
 public:
  Status() = default;
  // Takes ownership of a C status (NULL: ok).
  explicit Status(nfuse_status* s) : code_(nfuse_status_get_code(s)), message_(nfuse_status_get_message(s)) {
    nfuse_status_release(s);
  }
  // A status made by the caller (its own errors in the same form).
  Status(nfuse_status_code code, std::string message) : code_(code), message_(std::move(message)) {}
  bool ok() const { return code_ == NFUSE_OK; }
  nfuse_status_code code() const { return code_; }
  const std::string& message() const { return message_; }
  // "invalid argument: nfuse_session_run: ..."
  std::string to_string() const {
    return ok() ? std::string("ok") : std::string(nfuse_status_code_name(code_)) + ": " + message_;
  }

 private:
  nfuse_status_code code_ = NFUSE_OK;
  std::string message_;
};

// A value or the Status that prevented it. value() on an error is a programming error (asserted
// by the caller through ok()); it returns a default-constructed T.
template <typename T>
class Result {
 public:
  Result(T value) : value_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  Result(Status status) : status_(std::move(status)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return status_.ok(); }
  const Status& status() const { return status_; }
  T& value() & { return value_; }
  const T& value() const& { return value_; }
  T&& value() && { return std::move(value_); }
  T* operator->() { return &value_; }
  T& operator*() & { return value_; }

 private:
  T value_{};
  Status status_;
};

class Runtime {
 public:
  static Result<Runtime> create() {
    nfuse_runtime* p = nullptr;
    Status s(nfuse_runtime_create(&p));
    if (!s.ok()) return s;
    return Runtime(p);
  }
  Runtime() = default;
  nfuse_runtime* get() const { return h_.get(); }
  Status set_log_sink(nfuse_log_level min_level, nfuse_log_fn fn, void* user_data) {
    return Status(nfuse_runtime_set_log_sink(h_.get(), min_level, fn, user_data));
  }
  // Registered backend names, sorted.
  Result<std::vector<std::string>> backends() const {
    size_t n = 0;
    Status s(nfuse_runtime_backend_count(h_.get(), &n));
    if (!s.ok()) return s;
    std::vector<std::string> names;
    for (size_t i = 0; i < n; ++i) {
      const char* name = nullptr;
      Status si(nfuse_runtime_backend_name(h_.get(), i, &name));
      if (!si.ok()) return si;
      names.emplace_back(name);
    }
    return names;
  }
  // How later loads treat a context binary that is suboptimal on this device.
  Status set_context_compat(nfuse_compat_mode mode) { return Status(nfuse_runtime_set_context_compat(h_.get(), mode)); }
  // Scheduling (nfuse_runtime_set_performance_mode, nfuse_runtime_set_tracing, nfuse_runtime_trace).
  Status set_performance_mode(nfuse_performance_mode mode) {
    return Status(nfuse_runtime_set_performance_mode(h_.get(), mode));
  }
  Status set_tracing(bool on) { return Status(nfuse_runtime_set_tracing(h_.get(), on ? 1 : 0)); }
  Status set_thread_pinning(bool on) { return Status(nfuse_runtime_set_thread_pinning(h_.get(), on ? 1 : 0)); }
  Result<std::string> trace() {
    const char* json = nullptr;
    Status s(nfuse_runtime_trace(h_.get(), &json));
    if (!s.ok()) return s;
    return std::string(json);
  }

 private:
  explicit Runtime(nfuse_runtime* p) : h_(p) {}
  api_detail::Handle<nfuse_runtime, nfuse_runtime_release> h_;
};

class Model {
 public:
  static Result<Model> load(const Runtime& rt, const std::string& path) {
    nfuse_model* p = nullptr;
    Status s(nfuse_model_load_file(rt.get(), path.c_str(), &p));
    if (!s.ok()) return s;
    return Model(p);
  }
  static Result<Model> load(const Runtime& rt, const void* data, size_t size) {
    nfuse_model* p = nullptr;
    Status s(nfuse_model_load_memory(rt.get(), data, size, &p));
    if (!s.ok()) return s;
    return Model(p);
  }
  // A context binary in memory the caller keeps alive (64-byte aligned): nothing is copied.
  static Result<Model> load_context_buffer(const Runtime& rt, const void* data, size_t size) {
    nfuse_model* p = nullptr;
    Status s(nfuse_model_load_context_buffer(rt.get(), data, size, &p));
    if (!s.ok()) return s;
    return Model(p);
  }
  Model() = default;
  nfuse_model* get() const { return h_.get(); }
  Result<bool> is_context() const {
    int v = 0;
    Status s(nfuse_model_is_context(h_.get(), &v));
    if (!s.ok()) return s;
    return v != 0;
  }

 private:
  explicit Model(nfuse_model* p) : h_(p) {}
  api_detail::Handle<nfuse_model, nfuse_model_release> h_;
};

// Options are collected here and applied when the session is created; the first failing setter
// is reported then.
class SessionOptions {
 public:
  SessionOptions& backend(nfuse_backend b) {
    return add([b](nfuse_session_options* o) { return nfuse_session_options_set_backend(o, b); });
  }
  SessionOptions& backend(const std::string& name) {
    return add([name](nfuse_session_options* o) { return nfuse_session_options_set_backend_name(o, name.c_str()); });
  }
  SessionOptions& prefer(std::vector<nfuse_backend> order) {
    return add([order](nfuse_session_options* o) {
      return nfuse_session_options_set_preferred(o, order.data(), order.size());
    });
  }
  SessionOptions& pin(const std::string& node_or_op_type, nfuse_backend b) {
    return add([node_or_op_type, b](nfuse_session_options* o) {
      return nfuse_session_options_add_pin(o, node_or_op_type.c_str(), b);
    });
  }
  SessionOptions& deny(const std::string& op_type) {
    return add([op_type](nfuse_session_options* o) { return nfuse_session_options_add_denial(o, op_type.c_str()); });
  }
  SessionOptions& threads(int n) {
    return add([n](nfuse_session_options* o) { return nfuse_session_options_set_threads(o, n); });
  }
  SessionOptions& optimize(bool on) {
    return add([on](nfuse_session_options* o) { return nfuse_session_options_set_optimization(o, on ? 1 : 0); });
  }
  SessionOptions& keep_output(const std::string& name) {
    return add([name](nfuse_session_options* o) { return nfuse_session_options_add_output(o, name.c_str()); });
  }
  SessionOptions& require_full_offload(bool on) {
    return add(
        [on](nfuse_session_options* o) { return nfuse_session_options_set_require_full_offload(o, on ? 1 : 0); });
  }
  SessionOptions& tile_rows(int rows) {
    return add([rows](nfuse_session_options* o) { return nfuse_session_options_set_tile_rows(o, rows); });
  }

  // Plans for these input dims at creation (API level 2).
  SessionOptions& input_shape(const std::string& name, const std::vector<int64_t>& dims) {
    return add([name, dims](nfuse_session_options* o) {
      return nfuse_session_options_set_input_shape(o, name.c_str(), dims.data(), dims.size());
    });
  }

  SessionOptions& device_profile(const std::string& path) {
    return add([path](nfuse_session_options* o) { return nfuse_session_options_set_device_profile(o, path.c_str()); });
  }

  // A C options object with every setting applied (the caller releases it).
  Status build(nfuse_session_options** out) const {
    Status s(nfuse_session_options_create(out));
    for (size_t i = 0; s.ok() && i < setters_.size(); ++i) s = Status(setters_[i](*out));
    if (!s.ok()) {
      nfuse_session_options_release(*out);
      *out = nullptr;
    }
    return s;
  }

 private:
  SessionOptions& add(std::function<nfuse_status*(nfuse_session_options*)> setter) {
    setters_.push_back(std::move(setter));
    return *this;
  }
  std::vector<std::function<nfuse_status*(nfuse_session_options*)>> setters_;
};

class Tensor {
 public:
  // Owning, zero-filled.
  static Result<Tensor> create(nfuse_dtype dtype, const std::vector<int64_t>& dims) {
    nfuse_tensor* p = nullptr;
    Status s(nfuse_tensor_create(dtype, dims.data(), dims.size(), &p));
    if (!s.ok()) return s;
    return Tensor(p);
  }
  // Over the caller's memory, which must outlive the tensor.
  static Result<Tensor> wrap(nfuse_dtype dtype, const std::vector<int64_t>& dims, void* data, size_t byte_size) {
    nfuse_tensor* p = nullptr;
    Status s(nfuse_tensor_wrap(dtype, dims.data(), dims.size(), data, byte_size, &p));
    if (!s.ok()) return s;
    return Tensor(p);
  }
  // A .npy file's contents, owned.
  static Result<Tensor> load_npy(const std::string& path) {
    nfuse_tensor* p = nullptr;
    Status s(nfuse_tensor_load_npy(path.c_str(), &p));
    if (!s.ok()) return s;
    return Tensor(p);
  }
  Status save_npy(const std::string& path) const { return Status(nfuse_tensor_save_npy(h_.get(), path.c_str())); }
  Tensor() = default;
  // Takes ownership of a C tensor.
  explicit Tensor(nfuse_tensor* p) : h_(p) {}
  nfuse_tensor* get() const { return h_.get(); }
  nfuse_dtype dtype() const {
    nfuse_dtype t = NFUSE_DTYPE_UNDEFINED;
    nfuse_status_release(nfuse_tensor_get_dtype(h_.get(), &t));
    return t;
  }
  std::vector<int64_t> dims() const {
    size_t rank = 0;
    const int64_t* d = nullptr;
    if (nfuse_status* s = nfuse_tensor_get_rank(h_.get(), &rank))
      return nfuse_status_release(s), std::vector<int64_t>{};
    if (nfuse_status* s = nfuse_tensor_get_dims(h_.get(), &d)) return nfuse_status_release(s), std::vector<int64_t>{};
    return std::vector<int64_t>(d, d + rank);
  }
  size_t byte_size() const {
    size_t n = 0;
    nfuse_status_release(nfuse_tensor_get_byte_size(h_.get(), &n));
    return n;
  }
  void* data() {
    void* p = nullptr;
    nfuse_status_release(nfuse_tensor_get_data(h_.get(), &p));
    return p;
  }
  template <typename T>
  T* data_as() {
    return static_cast<T*>(data());
  }

 private:
  api_detail::Handle<nfuse_tensor, nfuse_tensor_release> h_;
};

// Per-request settings (nfuse_run_options).
// A fence: signalled when a request's outputs are written, or by the caller (nfuse_fence_*).
class Fence {
 public:
  static Result<Fence> create(const std::string& label) {
    nfuse_fence* p = nullptr;
    Status s(nfuse_fence_create(label.c_str(), &p));
    if (!s.ok()) return s;
    return Fence(p);
  }
  Fence() = default;
  explicit Fence(nfuse_fence* p) : h_(p) {}
  nfuse_fence* get() const { return h_.get(); }
  Status signal() { return Status(nfuse_fence_signal(h_.get())); }
  Status fail(const std::string& message) { return Status(nfuse_fence_fail(h_.get(), message.c_str())); }
  // True once settled within `timeout_us` (< 0: for ever); a failed fence's cause as the error.
  Result<bool> wait(int64_t timeout_us = -1) const {
    int settled = 0;
    Status s(nfuse_fence_wait(h_.get(), timeout_us, &settled));
    if (!s.ok()) return s;
    return settled != 0;
  }

 private:
  api_detail::Handle<nfuse_fence, nfuse_fence_release> h_;
};

// A submitted run (Session::submit).
class Request {
 public:
  Request() = default;
  explicit Request(nfuse_request* p) : h_(p) {}
  nfuse_request* get() const { return h_.get(); }
  Status wait() { return Status(nfuse_request_wait(h_.get())); }
  Result<Fence> fence() const {
    nfuse_fence* p = nullptr;
    Status s(nfuse_request_fence(h_.get(), &p));
    if (!s.ok()) return s;
    return Fence(p);
  }
  Result<Tensor> output(size_t index) {
    nfuse_tensor* p = nullptr;
    Status s(nfuse_request_output(h_.get(), index, &p));
    if (!s.ok()) return s;
    return Tensor(p);
  }
  Result<std::string> stats() {
    const char* json = nullptr;
    Status s(nfuse_request_stats(h_.get(), &json));
    if (!s.ok()) return s;
    return std::string(json);
  }

 private:
  api_detail::Handle<nfuse_request, nfuse_request_release> h_;
};

class RunOptions {
 public:
  static Result<RunOptions> create() {
    nfuse_run_options* p = nullptr;
    Status s(nfuse_run_options_create(&p));
    if (!s.ok()) return s;
    return RunOptions(p);
  }
  RunOptions() = default;
  nfuse_run_options* get() const { return h_.get(); }
  Status set_profiling(bool on) { return Status(nfuse_run_options_set_profiling(h_.get(), on ? 1 : 0)); }
  Status set_priority(nfuse_priority priority) { return Status(nfuse_run_options_set_priority(h_.get(), priority)); }
  Status set_deadline(double ms, bool drop_if_late = false) {
    return Status(nfuse_run_options_set_deadline(h_.get(), ms, drop_if_late ? 1 : 0));
  }
  Status set_performance_mode(nfuse_performance_mode mode) {
    return Status(nfuse_run_options_set_performance_mode(h_.get(), mode));
  }
  Status add_wait_fence(const Fence& fence) { return Status(nfuse_run_options_add_wait_fence(h_.get(), fence.get())); }
  Status clear_wait_fences() { return Status(nfuse_run_options_clear_wait_fences(h_.get())); }
  Status set_label(const std::string& label) { return Status(nfuse_run_options_set_label(h_.get(), label.c_str())); }

 private:
  explicit RunOptions(nfuse_run_options* p) : h_(p) {}
  api_detail::Handle<nfuse_run_options, nfuse_run_options_release> h_;
};

// One input or output of a session: name, dtype and dims (-1 with `symbols[i]` where symbolic).
struct IoInfo {
  std::string name;
  nfuse_dtype dtype = NFUSE_DTYPE_UNDEFINED;
  bool rank_known = false;
  std::vector<int64_t> dims;
  std::vector<std::string> symbols;
};

class Session {
 public:
  static Result<Session> create(const Runtime& rt, const Model& model,
                                const SessionOptions& options = SessionOptions()) {
    nfuse_session_options* o = nullptr;
    Status s = options.build(&o);
    if (!s.ok()) return s;
    nfuse_session* p = nullptr;
    s = Status(nfuse_session_create(rt.get(), model.get(), o, &p));
    nfuse_session_options_release(o);
    if (!s.ok()) return s;
    return Session(p);
  }
  Session() = default;
  nfuse_session* get() const { return h_.get(); }
  // Zero-copy I/O: bind once, run_bound() many times (see nfuse_session_bind_output).
  Status bind_input(const std::string& name, const Tensor& t) {
    return Status(nfuse_session_bind_input(h_.get(), name.c_str(), t.get()));
  }
  Status bind_output(const std::string& name, Tensor& t) {
    return Status(nfuse_session_bind_output(h_.get(), name.c_str(), t.get()));
  }
  Status clear_bindings() { return Status(nfuse_session_clear_bindings(h_.get())); }
  Status run_bound(const RunOptions* options = nullptr) {
    return Status(nfuse_session_run_bound(h_.get(), options ? options->get() : nullptr));
  }
  // Bytes the last run_bound copied: {from inputs, into outputs}.
  Result<std::pair<uint64_t, uint64_t>> copied_bytes() const {
    uint64_t in = 0, out = 0;
    Status s(nfuse_session_get_copied_bytes(h_.get(), &in, &out));
    if (!s.ok()) return s;
    return std::make_pair(in, out);
  }
  // The backend its plans use (a context binary's own, for one).
  Result<std::string> backend() const {
    const char* name = nullptr;
    Status s(nfuse_session_backend(h_.get(), &name));
    if (!s.ok()) return s;
    return std::string(name);
  }
  // Saves this session's optimized graph and plan options as a context binary.
  Status save_context(const Model& model, const std::string& path) const {
    return Status(nfuse_session_save_context(h_.get(), model.get(), path.c_str()));
  }

  Result<std::vector<IoInfo>> inputs() const { return describe(NFUSE_IO_INPUT); }
  Result<std::vector<IoInfo>> outputs() const { return describe(NFUSE_IO_OUTPUT); }

  // Every output, in model order.
  Result<std::vector<Tensor>> run(const std::vector<std::pair<std::string, const Tensor*>>& inputs,
                                  const RunOptions* options = nullptr) {
    size_t n = 0;
    Status s(nfuse_session_io_count(h_.get(), NFUSE_IO_OUTPUT, &n));
    if (!s.ok()) return s;
    return run(inputs, nullptr, n, options);
  }
  // The named outputs, in the order asked.
  Result<std::vector<Tensor>> run(const std::vector<std::pair<std::string, const Tensor*>>& inputs,
                                  const std::vector<std::string>& output_names) {
    std::vector<const char*> names;
    for (const std::string& o : output_names) names.push_back(o.c_str());
    return run(inputs, names.data(), names.size(), nullptr);
  }
  // Queues a run and returns at once (nfuse_session_submit); the inputs' memory must stay
  // unchanged until the request settles.
  Result<Request> submit(const std::vector<std::pair<std::string, const Tensor*>>& inputs,
                         const RunOptions* options = nullptr, nfuse_request_done_fn done = nullptr,
                         void* user_data = nullptr) {
    std::vector<const char*> names;
    std::vector<const nfuse_tensor*> tensors;
    for (const auto& [name, t] : inputs) {
      names.push_back(name.c_str());
      tensors.push_back(t ? t->get() : nullptr);
    }
    nfuse_request* p = nullptr;
    Status s(nfuse_session_submit(h_.get(), names.data(), tensors.data(), names.size(),
                                  options ? options->get() : nullptr, done, user_data, &p));
    if (!s.ok()) return s;
    return Request(p);
  }
  // The placement report as JSON text.
  Result<std::string> placement_report() { return text(nfuse_session_placement_report); }
  // Per-node timings of the profiled runs, as JSON text (nfuse_session_profile).
  Result<std::string> profile() { return text(nfuse_session_profile); }
  Status reset_profile() { return Status(nfuse_session_profile_reset(h_.get())); }
  // Arena traffic per inference, as JSON text (nfuse_session_traffic).
  Result<std::string> traffic() { return text(nfuse_session_traffic); }
  // The profiled runs as a Chrome trace, JSON text (nfuse_session_trace).
  Result<std::string> trace() { return text(nfuse_session_trace); }
  // What the last run executed and cost, one JSON line (nfuse_session_last_run_stats).
  Result<std::string> last_run_stats() { return text(nfuse_session_last_run_stats); }

 private:
  explicit Session(nfuse_session* p) : h_(p) {}
  Result<std::vector<Tensor>> run(const std::vector<std::pair<std::string, const Tensor*>>& inputs,
                                  const char* const* output_names, size_t output_count, const RunOptions* options) {
    std::vector<const char*> names;
    std::vector<const nfuse_tensor*> tensors;
    for (const auto& [name, t] : inputs) {
      names.push_back(name.c_str());
      tensors.push_back(t ? t->get() : nullptr);
    }
    std::vector<nfuse_tensor*> raw(output_count, nullptr);
    Status s(nfuse_session_run(h_.get(), names.data(), tensors.data(), names.size(), output_names, raw.data(),
                               output_count, options ? options->get() : nullptr));
    if (!s.ok()) return s;
    std::vector<Tensor> out;
    for (nfuse_tensor* t : raw) out.emplace_back(t);
    return out;
  }
  Result<std::string> text(nfuse_status* (*fn)(nfuse_session*, const char**)) {
    const char* json = nullptr;
    Status s(fn(h_.get(), &json));
    if (!s.ok()) return s;
    return std::string(json);
  }
  Result<std::vector<IoInfo>> describe(nfuse_io_kind kind) const {
    size_t n = 0;
    Status s(nfuse_session_io_count(h_.get(), kind, &n));
    if (!s.ok()) return s;
    std::vector<IoInfo> list(n);
    for (size_t i = 0; i < n; ++i) {
      IoInfo& io = list[i];
      const char* name = nullptr;
      s = Status(nfuse_session_io_name(h_.get(), kind, i, &name));
      if (!s.ok()) return s;
      io.name = name;
      s = Status(nfuse_session_io_dtype(h_.get(), kind, i, &io.dtype));
      if (!s.ok()) return s;
      size_t rank = 0;
      Status rs(nfuse_session_io_rank(h_.get(), kind, i, &rank));
      io.rank_known = rs.ok();
      for (size_t d = 0; io.rank_known && d < rank; ++d) {
        int64_t v = 0;
        const char* sym = nullptr;
        s = Status(nfuse_session_io_dim(h_.get(), kind, i, d, &v, &sym));
        if (!s.ok()) return s;
        io.dims.push_back(v);
        io.symbols.emplace_back(sym ? sym : "");
      }
    }
    return list;
  }
  api_detail::Handle<nfuse_session, nfuse_session_release> h_;
};

// The options of nfuse_quantize (and `nfuse quantize`), with its defaults.
struct QuantizeOptions {
  std::string calibration_data;   // folder of .npy inputs or PNG/JPEG images (required)
  int64_t calibration_limit = 0;  // 0: every file
  std::string evaluation_data;    // held-out folder; empty: none
  nfuse_calibration_method method = NFUSE_CALIBRATION_AUTO;
  double percentile = 99.99;
  nfuse_activation_scheme activations = NFUSE_ACTIVATIONS_U8;
  nfuse_precision precision = NFUSE_PRECISION_INT8;
  double target_cosine = 0.99;
  nfuse_promotion promote = NFUSE_PROMOTE_AUTO;
  nfuse_weight_bits weights = NFUSE_WEIGHTS_INT8;
  int threads = 1;
  bool cross_layer_equalization = false;
  bool bias_correction = false;
  std::string report_json_path, report_html_path;  // empty: not written
  int64_t image_height = 0, image_width = 0;       // 0: the model input's size
  std::vector<float> image_mean, image_std;        // 3 values each in 0..255 units, or empty
  nfuse_image_layout image_layout = NFUSE_IMAGE_NCHW;
};

struct QuantizeResult {
  std::string summary;      // what `nfuse quantize` prints
  std::string report_json;  // the per-layer report
};

// Quantizes the model at `model_path` into a QDQ model at `output_path`.
inline Result<QuantizeResult> quantize(const Runtime& rt, const std::string& model_path, const std::string& output_path,
                                       const QuantizeOptions& q) {
  nfuse_quantize_options* o = nullptr;
  Status s(nfuse_quantize_options_create(&o));
  api_detail::Handle<nfuse_quantize_options, nfuse_quantize_options_release> owner(o);
  auto apply = [&s](nfuse_status* st) {
    if (s.ok())
      s = Status(st);
    else
      nfuse_status_release(st);
  };
  if (!s.ok()) return s;
  if (q.image_mean.size() != 0 && q.image_mean.size() != 3)
    return Status(NFUSE_INVALID_ARGUMENT, "quantize: image_mean needs 3 values");
  if (q.image_std.size() != 0 && q.image_std.size() != 3)
    return Status(NFUSE_INVALID_ARGUMENT, "quantize: image_std needs 3 values");
  apply(nfuse_quantize_options_set_calibration_data(o, q.calibration_data.c_str(), q.calibration_limit));
  if (!q.evaluation_data.empty()) apply(nfuse_quantize_options_set_evaluation_data(o, q.evaluation_data.c_str()));
  apply(nfuse_quantize_options_set_method(o, q.method, q.percentile));
  apply(nfuse_quantize_options_set_activations(o, q.activations));
  apply(nfuse_quantize_options_set_precision(o, q.precision, q.target_cosine, q.promote));
  apply(nfuse_quantize_options_set_weights(o, q.weights));
  apply(nfuse_quantize_options_set_threads(o, q.threads));
  apply(nfuse_quantize_options_set_equalization(o, q.cross_layer_equalization ? 1 : 0, q.bias_correction ? 1 : 0));
  apply(nfuse_quantize_options_set_reports(o, q.report_json_path.empty() ? nullptr : q.report_json_path.c_str(),
                                           q.report_html_path.empty() ? nullptr : q.report_html_path.c_str()));
  apply(nfuse_quantize_options_set_image_preprocessing(
      o, q.image_height, q.image_width, q.image_mean.empty() ? nullptr : q.image_mean.data(),
      q.image_std.empty() ? nullptr : q.image_std.data(), q.image_layout));
  if (!s.ok()) return s;
  const char* summary = nullptr;
  const char* report = nullptr;
  s = Status(nfuse_quantize(rt.get(), model_path.c_str(), output_path.c_str(), o, &summary, &report));
  if (!s.ok()) return s;
  return QuantizeResult{summary, report};
}

}  // namespace api_v1
}  // namespace nfuse

#endif  // NFUSE_NFUSE_HPP_
