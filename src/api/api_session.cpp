// C API: session options, sessions, metadata, runs and the placement report.
#include <algorithm>

#include "api/api_objects.h"
#include "backends/backend.h"
#include "compile/context/sha256.h"
#include "compile/plan_traffic.h"
#include "runtime/chrome_trace.h"
#include "runtime/profile_summary.h"

namespace nfuse::api {
namespace {

Status check_backend(const char* fn, const nfuse_backend& backend) {
  const long long bits = enum_bits(backend);
  if (bits < NFUSE_BACKEND_AUTO || bits > NFUSE_BACKEND_FUSION)
    return invalid_argument(std::string(fn) + ": unknown backend " + std::to_string(bits));
  return ok_status();
}

Status check_text(const char* fn, const char* what, const char* text) {
  if (!text) return invalid_argument(std::string(fn) + ": " + what + " is NULL");
  if (!*text) return invalid_argument(std::string(fn) + ": " + what + " is empty");
  return ok_status();
}

nfuse_io_info describe(const ir::Value& v) {
  nfuse_io_info info;
  info.name = v.name;
  info.dtype = to_c(v.type.dtype);
  info.rank_known = v.type.shape.rank_known();
  if (info.rank_known) {
    for (const ir::Dim& d : v.type.shape.dims()) {
      info.dims.push_back(d.is_static() ? d.value : -1);
      info.symbols.push_back(d.is_static() ? "" : d.symbol);
    }
  }
  return info;
}

// The plan for `dims`, built now; its placement warnings go to the runtime's log.
Status prepare_and_log(nfuse_session& s, const std::map<std::string, std::vector<int64_t>>& dims) {
  NFUSE_ASSIGN_OR_RETURN(const compile::Plan* plan, s.impl->prepare(dims));
  if (plan->partition_report)
    for (const std::string& w : plan->partition_report->warnings) s.runtime->log(NFUSE_LOG_WARNING, w);
  return ok_status();
}

// Builds the plan now when no input has a symbolic dim, so placement errors (a required full
// offload, a pin to a backend that cannot run the node) surface at creation, not at the first run.
Status prepare_static(nfuse_session& s) {
  for (const nfuse_io_info& in : s.inputs) {
    if (!in.rank_known) return ok_status();
    for (int64_t d : in.dims)
      if (d < 0) return ok_status();
  }
  return prepare_and_log(s, s.impl->default_input_dims());
}

// The plan for the caller's input shapes (nfuse_session_options_set_input_shape), built now:
// every input named there takes those dims, the others keep their static ones. Like a run,
// dims other than a fixed one the model states are planned, not refused (shape inference
// refuses what does not fit).
Status prepare_given(nfuse_session& s, const std::map<std::string, std::vector<int64_t>>& shapes) {
  if (shapes.empty()) return ok_status();
  std::map<std::string, std::vector<int64_t>> signature;
  for (const nfuse_io_info& in : s.inputs) {
    auto given = shapes.find(in.name);
    if (given != shapes.end()) {
      if (in.rank_known && given->second.size() != in.dims.size())
        return invalid_argument("input shape for '" + in.name + "': rank " + std::to_string(given->second.size()) +
                                ", but the model's input has rank " + std::to_string(in.dims.size()));
      signature[in.name] = given->second;
      continue;
    }
    bool fixed = in.rank_known;
    for (int64_t d : in.dims) fixed = fixed && d >= 0;
    if (!fixed) return invalid_argument("input '" + in.name + "' has symbolic dims: give its shape too");
    signature[in.name] = in.dims;
  }
  for (const auto& [name, dims] : shapes) {
    bool found = false;
    for (const nfuse_io_info& in : s.inputs) found = found || in.name == name;
    if (!found) return invalid_argument("input shape for '" + name + "': the model has no input of that name");
  }
  return prepare_and_log(s, signature);
}

// The session's JSON getters: checks the handles, makes the text under the session's lock into
// the session-owned string `slot` (valid until that getter runs again) and hands it out.
template <typename MakeText>
nfuse_status* session_text(const char* fn, nfuse_session* session, const char** json, std::string nfuse_session::*slot,
                           MakeText make) {
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "json", json));
    std::lock_guard<std::mutex> lock(session->mutex);
    NFUSE_ASSIGN_OR_RETURN(session->*slot, make(*session));
    *json = (session->*slot).c_str();
    return ok_status();
  });
}

Status check_io_kind(const char* fn, const nfuse_io_kind& kind) {
  const long long bits = enum_bits(kind);
  if (bits != NFUSE_IO_INPUT && bits != NFUSE_IO_OUTPUT)
    return invalid_argument(std::string(fn) + ": unknown io kind " + std::to_string(bits));
  return ok_status();
}

Result<const nfuse_io_info*> io_at(const char* fn, const nfuse_session* s, const nfuse_io_kind& kind, size_t index) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", s));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_io_kind(fn, kind));
  const auto& list = kind == NFUSE_IO_INPUT ? s->inputs : s->outputs;
  if (index >= list.size())
    return invalid_argument(std::string(fn) + ": " + (kind == NFUSE_IO_INPUT ? "input" : "output") + " index " +
                            std::to_string(index) + " out of range (" + std::to_string(list.size()) + ")");
  return &list[index];
}

// The graph-output index of every requested output (all, in order, when names is NULL).
Result<std::vector<size_t>> output_indices(const char* fn, const nfuse_session& s, const char* const* names,
                                           size_t count) {
  std::vector<size_t> idx;
  if (!names) {
    if (count != s.outputs.size())
      return invalid_argument(std::string(fn) + ": output_names is NULL but output_count " + std::to_string(count) +
                              " is not the model's " + std::to_string(s.outputs.size()) + " outputs");
    for (size_t i = 0; i < count; ++i) idx.push_back(i);
    return idx;
  }
  for (size_t i = 0; i < count; ++i) {
    if (!names[i]) return invalid_argument(std::string(fn) + ": output_names[" + std::to_string(i) + "] is NULL");
    NFUSE_ASSIGN_OR_RETURN(size_t i_out, io_index(fn, s.outputs, names[i], "output"));
    idx.push_back(i_out);
  }
  return idx;
}

}  // namespace

Status named_inputs(const char* fn, runtime::NamedTensors& named, const char* const* names,
                    const nfuse_tensor* const* inputs, size_t count) {
  if (count > 0 && !names) return invalid_argument(std::string(fn) + ": input_names is NULL");
  if (count > 0 && !inputs) return invalid_argument(std::string(fn) + ": inputs is NULL");
  named.resize(count);
  for (size_t i = 0; i < count; ++i) {
    if (!names[i]) return invalid_argument(std::string(fn) + ": input_names[" + std::to_string(i) + "] is NULL");
    if (!inputs[i] || !live<nfuse_tensor>().contains(inputs[i])) {
      const std::string what = "inputs[" + std::to_string(i) + "] ('" + names[i] + "')";
      return check_handle(fn, what.c_str(), inputs[i]);
    }
    for (size_t j = 0; j < i; ++j)  // a handful of inputs: no set needed
      if (named[j].first == names[i])
        return invalid_argument(std::string(fn) + ": input '" + names[i] + "' is given twice");
    named[i].first = names[i];
    named[i].second = inputs[i]->tensor;
  }
  return ok_status();
}

namespace {

Status run(nfuse_session& s, std::unique_lock<std::mutex>& lock, const char* const* input_names,
           const nfuse_tensor* const* inputs, size_t input_count, const char* const* output_names,
           nfuse_tensor** outputs, size_t output_count, const nfuse_run_options* run_options) {
  constexpr const char* fn = "nfuse_session_run";
  if (output_count > 0 && !outputs) return invalid_argument(std::string(fn) + ": outputs is NULL");
  for (size_t i = 0; i < output_count; ++i) outputs[i] = nullptr;
  NFUSE_ASSIGN_OR_RETURN(std::vector<size_t> which, output_indices(fn, s, output_names, output_count));
  runtime::NamedTensors named;
  Status bound = named_inputs(fn, named, input_names, inputs, input_count);
  auto result =
      bound.ok() ? scheduled_run(s, lock, named, {}, nullptr, run_options) : Result<std::vector<ir::Tensor>>(bound);
  // Every input was given (Session::run checks), so the keys stay the same run after run and
  // their dims vectors are reassigned in place.
  if (result.ok())
    for (const auto& [name, t] : named) s.last_dims[name] = t.dims();
  if (!result.ok()) return result.status().with_context(fn);
  std::vector<std::unique_ptr<nfuse_tensor>> made;
  for (size_t i : which) {
    made.push_back(std::make_unique<nfuse_tensor>());
    made.back()->tensor = (*result)[i];
  }
  for (size_t i = 0; i < made.size(); ++i) publish(std::move(made[i]), &outputs[i]);
  return ok_status();
}

}  // namespace

Result<size_t> io_index(const char* fn, const std::vector<nfuse_io_info>& list, const char* name, const char* what) {
  for (size_t i = 0; i < list.size(); ++i)
    if (list[i].name == name) return i;
  return invalid_argument(std::string(fn) + ": the model has no " + what + " named '" + name + "'");
}

// The input dims of the last successful run, else the defaults (symbolic dims as 1).
std::map<std::string, std::vector<int64_t>> current_dims(const nfuse_session& s) {
  return s.last_dims.empty() ? s.impl->default_input_dims() : s.last_dims;
}

}  // namespace nfuse::api

using namespace nfuse;
using api::check_handle;
using api::check_out;
using api::guard;

extern "C" {

nfuse_status* nfuse_session_options_create(nfuse_session_options** out) {
  return api::create("nfuse_session_options_create", out, [](nfuse_session_options& o) { o.options.backend = "auto"; });
}

void nfuse_session_options_release(nfuse_session_options* options) { api::retire(options); }

nfuse_status* nfuse_session_options_set_backend(nfuse_session_options* options, nfuse_backend backend) {
  constexpr const char* fn = "nfuse_session_options_set_backend";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_backend(fn, backend));
    o.backend = nfuse_backend_name(backend);
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_set_backend_name(nfuse_session_options* options, const char* name) {
  constexpr const char* fn = "nfuse_session_options_set_backend_name";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_text(fn, "name", name));
    if (std::string(name) != "auto") {
      auto b = backends::BackendRegistry::global().create(name);
      if (!b.ok()) return b.status().with_context(fn);
    }
    o.backend = name;
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_set_preferred(nfuse_session_options* options, const nfuse_backend* order,
                                                  size_t count) {
  constexpr const char* fn = "nfuse_session_options_set_preferred";
  return api::set(fn, options, [&](auto& o) -> Status {
    if (count > 0 && !order) return invalid_argument(std::string(fn) + ": order is NULL");
    std::vector<std::string> prefer;
    for (size_t i = 0; i < count; ++i) {
      NFUSE_RETURN_IF_ERROR_PLAIN(api::check_backend(fn, order[i]));
      if (order[i] == NFUSE_BACKEND_AUTO)
        return invalid_argument(std::string(fn) + ": 'auto' is the partitioner, not a backend to prefer");
      prefer.push_back(nfuse_backend_name(order[i]));
    }
    o.partition.prefer = std::move(prefer);
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_add_pin(nfuse_session_options* options, const char* node_or_op_type,
                                            nfuse_backend backend) {
  constexpr const char* fn = "nfuse_session_options_add_pin";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_text(fn, "node_or_op_type", node_or_op_type));
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_backend(fn, backend));
    if (backend == NFUSE_BACKEND_AUTO)
      return invalid_argument(std::string(fn) + ": a node is pinned to a backend, not to 'auto'");
    o.partition.pins[node_or_op_type] = nfuse_backend_name(backend);
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_add_denial(nfuse_session_options* options, const char* op_type) {
  constexpr const char* fn = "nfuse_session_options_add_denial";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_text(fn, "op_type", op_type));
    o.partition.deny.push_back(op_type);
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_set_threads(nfuse_session_options* options, int threads) {
  constexpr const char* fn = "nfuse_session_options_set_threads";
  return api::set(fn, options, [&](auto& o) -> Status {
    constexpr int kMaxThreads = 1024;
    if (threads < 1 || threads > kMaxThreads)
      return invalid_argument(std::string(fn) + ": threads must be 1.." + std::to_string(kMaxThreads) + ", got " +
                              std::to_string(threads));
    o.threads = threads;
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_set_optimization(nfuse_session_options* options, int enabled) {
  return api::set("nfuse_session_options_set_optimization", options, [&](auto& o) -> Status {
    o.optimize = enabled != 0;
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_add_output(nfuse_session_options* options, const char* name) {
  constexpr const char* fn = "nfuse_session_options_add_output";
  return api::set(fn, options, [&](auto& o) -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_text(fn, "name", name));
    o.outputs.push_back(name);
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_set_require_full_offload(nfuse_session_options* options, int enabled) {
  return api::set("nfuse_session_options_set_require_full_offload", options, [&](auto& o) -> Status {
    o.partition.require_full_offload = enabled != 0;
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_set_tile_rows(nfuse_session_options* options, int rows) {
  constexpr const char* fn = "nfuse_session_options_set_tile_rows";
  return api::set(fn, options, [&](auto& o) -> Status {
    if (rows < 0) return invalid_argument(std::string(fn) + ": rows must be >= 0, got " + std::to_string(rows));
    o.tile_rows = rows;
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_set_input_shape(nfuse_session_options* options, const char* name,
                                                    const int64_t* dims, size_t rank) {
  constexpr const char* fn = "nfuse_session_options_set_input_shape";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "options", options));
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_text(fn, "name", name));
    if (rank > 0 && !dims) return invalid_argument(std::string(fn) + ": dims is NULL for rank " + std::to_string(rank));
    size_t bytes = 0;
    NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> v, api::checked_dims(fn, NFUSE_DTYPE_FLOAT32, dims, rank, &bytes));
    options->input_shapes[name] = std::move(v);
    return ok_status();
  });
}

nfuse_status* nfuse_session_options_set_device_profile(nfuse_session_options* options, const char* path) {
  return api::set("nfuse_session_options_set_device_profile", options, [&](auto& o) -> Status {
    o.partition.device_profile = path ? path : "";
    return ok_status();
  });
}

nfuse_status* nfuse_session_create(nfuse_runtime* runtime, const nfuse_model* model,
                                   const nfuse_session_options* options, nfuse_session** out) {
  constexpr const char* fn = "nfuse_session_create";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "runtime", runtime));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "model", model));
    runtime::SessionOptions so;
    so.backend = "auto";
    if (options) {
      NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "options", options));
      so = options->options;
    }
    std::unique_ptr<ir::Graph> graph;
    if (model->context) {
      // A context binary's plan options are part of the binary; the caller's threads stay.
      runtime::SessionOptions fixed = so;
      NFUSE_ASSIGN_OR_RETURN(graph, model->context->graph(&fixed));
      if (options && so.backend != fixed.backend)
        runtime->log(NFUSE_LOG_INFO, "context binary compiled for backend '" + fixed.backend +
                                         "': runs there, not on '" + so.backend + "'");
      for (const std::string& reason : model->context->verdict().reasons)
        runtime->log(NFUSE_LOG_WARNING, "context binary is suboptimal on this device: " + reason);
      so = std::move(fixed);
    }
    so.workers = runtime->workers(so.threads);
    std::shared_ptr<runtime::Executor> executor = runtime->executor(so.threads);
    // Recorded so nfuse_session_save_context can save the packed weights (the ops' own buffers).
    if (!so.packs) so.packs = std::make_shared<backends::PackStore>(true);
    if (!graph) {
      NFUSE_ASSIGN_OR_RETURN(graph, api::take_graph(*model));
    }
    auto s = std::make_unique<nfuse_session>();
    s->runtime = runtime;
    s->executor = std::move(executor);
    NFUSE_ASSIGN_OR_RETURN(s->impl, runtime::Session::create(std::move(graph), so));
    for (const std::string& line : s->impl->pass_report().lines()) runtime->log(NFUSE_LOG_VERBOSE, line);
    for (const ir::Value* v : s->impl->graph().inputs()) s->inputs.push_back(api::describe(*v));
    for (const ir::Value* v : s->impl->graph().outputs()) s->outputs.push_back(api::describe(*v));
    NFUSE_RETURN_IF_ERROR_PLAIN(api::prepare_static(*s));
    if (options) NFUSE_RETURN_IF_ERROR(api::prepare_given(*s, options->input_shapes), fn);
    if (model->context)
      for (const auto& signature : model->context->info().signatures)
        NFUSE_RETURN_IF_ERROR(s->impl->prepare(signature).status(), "preparing a compiled shape signature");
    api::publish(std::move(s), out);
    return ok_status();
  });
}

void nfuse_session_release(nfuse_session* session) { api::retire(session); }

nfuse_status* nfuse_session_backend(const nfuse_session* session, const char** out) {
  return api::get("nfuse_session_backend", "session", session, out,
                  [](const nfuse_session& s) { return s.impl->options().backend.c_str(); });
}

nfuse_status* nfuse_session_save_context(const nfuse_session* session, const nfuse_model* model, const char* path) {
  constexpr const char* fn = "nfuse_session_save_context";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "model", model));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "path", path));
    std::string name, sha;
    if (model->context) {
      name = model->context->info().source_name;
      sha = model->context->info().source_sha256;
    } else {
      name = model->source_name;
      sha = context::sha256_hex(model->bytes.data(), model->bytes.size());
    }
    NFUSE_RETURN_IF_ERROR(runtime::save_context(*session->impl, name, sha, path), std::string(fn) + ": '" + path + "'");
    return ok_status();
  });
}

nfuse_status* nfuse_session_io_count(const nfuse_session* session, nfuse_io_kind kind, size_t* out) {
  constexpr const char* fn = "nfuse_session_io_count";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    NFUSE_RETURN_IF_ERROR_PLAIN(api::check_io_kind(fn, kind));
    *out = (kind == NFUSE_IO_INPUT ? session->inputs : session->outputs).size();
    return ok_status();
  });
}

nfuse_status* nfuse_session_io_name(const nfuse_session* session, nfuse_io_kind kind, size_t index, const char** out) {
  constexpr const char* fn = "nfuse_session_io_name";
  return guard(fn, [&]() -> Status {
    NFUSE_ASSIGN_OR_RETURN(const nfuse_io_info* io, api::io_at(fn, session, kind, index));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = io->name.c_str();
    return ok_status();
  });
}

nfuse_status* nfuse_session_io_dtype(const nfuse_session* session, nfuse_io_kind kind, size_t index, nfuse_dtype* out) {
  constexpr const char* fn = "nfuse_session_io_dtype";
  return guard(fn, [&]() -> Status {
    NFUSE_ASSIGN_OR_RETURN(const nfuse_io_info* io, api::io_at(fn, session, kind, index));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = io->dtype;
    return ok_status();
  });
}

nfuse_status* nfuse_session_io_rank(const nfuse_session* session, nfuse_io_kind kind, size_t index, size_t* out) {
  constexpr const char* fn = "nfuse_session_io_rank";
  return guard(fn, [&]() -> Status {
    NFUSE_ASSIGN_OR_RETURN(const nfuse_io_info* io, api::io_at(fn, session, kind, index));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    if (!io->rank_known)
      return unsupported(std::string(fn) + ": the model does not give the rank of '" + io->name + "'");
    *out = io->dims.size();
    return ok_status();
  });
}

nfuse_status* nfuse_session_io_dim(const nfuse_session* session, nfuse_io_kind kind, size_t index, size_t dim,
                                   int64_t* value, const char** symbol) {
  constexpr const char* fn = "nfuse_session_io_dim";
  return guard(fn, [&]() -> Status {
    NFUSE_ASSIGN_OR_RETURN(const nfuse_io_info* io, api::io_at(fn, session, kind, index));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "value", value));
    if (!io->rank_known)
      return unsupported(std::string(fn) + ": the model does not give the rank of '" + io->name + "'");
    if (dim >= io->dims.size())
      return invalid_argument(std::string(fn) + ": dim " + std::to_string(dim) + " of '" + io->name +
                              "' out of range (rank " + std::to_string(io->dims.size()) + ")");
    *value = io->dims[dim];
    if (symbol) *symbol = io->dims[dim] >= 0 ? nullptr : io->symbols[dim].c_str();
    return ok_status();
  });
}

nfuse_status* nfuse_run_options_create(nfuse_run_options** out) {
  return api::create("nfuse_run_options_create", out, [](nfuse_run_options&) {});
}

void nfuse_run_options_release(nfuse_run_options* options) { api::retire(options); }

nfuse_status* nfuse_run_options_set_profiling(nfuse_run_options* options, int enabled) {
  constexpr const char* fn = "nfuse_run_options_set_profiling";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "options", options));
    options->profiling = enabled != 0;
    return ok_status();
  });
}

nfuse_status* nfuse_session_run(nfuse_session* session, const char* const* input_names,
                                const nfuse_tensor* const* inputs, size_t input_count, const char* const* output_names,
                                nfuse_tensor** outputs, size_t output_count, const nfuse_run_options* run_options) {
  constexpr const char* fn = "nfuse_session_run";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    if (run_options) NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "run_options", run_options));
    std::unique_lock<std::mutex> lock(session->mutex);
    return api::run(*session, lock, input_names, inputs, input_count, output_names, outputs, output_count, run_options);
  });
}

nfuse_status* nfuse_session_placement_report(nfuse_session* session, const char** json) {
  constexpr const char* fn = "nfuse_session_placement_report";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "json", json));
    std::lock_guard<std::mutex> lock(session->mutex);
    const auto dims = api::current_dims(*session);
    NFUSE_ASSIGN_OR_RETURN(session->report_json,
                           session->impl->placement_report_json(dims, session->impl->graph().name));
    *json = session->report_json.c_str();
    return ok_status();
  });
}

}  // extern "C"

extern "C" {

nfuse_status* nfuse_session_profile(nfuse_session* session, const char** json) {
  return api::session_text(
      "nfuse_session_profile", session, json, &nfuse_session::profile_json,
      [](nfuse_session& s) -> Result<std::string> { return runtime::profile_summary_json(s.profile).dump(); });
}

nfuse_status* nfuse_session_trace(nfuse_session* session, const char** json) {
  return api::session_text("nfuse_session_trace", session, json, &nfuse_session::trace_json,
                           [](nfuse_session& s) -> Result<std::string> {
                             const compile::Plan* plan = s.impl->cached_plan(api::current_dims(s));
                             return runtime::chrome_trace_json(s.profile, "nfuse session", plan).dump();
                           });
}

nfuse_status* nfuse_session_profile_reset(nfuse_session* session) {
  constexpr const char* fn = "nfuse_session_profile_reset";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    std::lock_guard<std::mutex> lock(session->mutex);
    session->profile.clear();
    return ok_status();
  });
}

nfuse_status* nfuse_session_traffic(nfuse_session* session, const char** json) {
  return api::session_text("nfuse_session_traffic", session, json, &nfuse_session::traffic_json,
                           [](nfuse_session& s) -> Result<std::string> {
                             NFUSE_ASSIGN_OR_RETURN(const compile::Plan* plan, s.impl->prepare(api::current_dims(s)));
                             return compile::plan_traffic_json(compile::plan_traffic(*plan)).dump();
                           });
}

nfuse_status* nfuse_session_last_run_stats(nfuse_session* session, const char** json) {
  return api::session_text("nfuse_session_last_run_stats", session, json, &nfuse_session::stats_json,
                           [](nfuse_session& s) -> Result<std::string> { return s.impl->last_run_stats().to_json(); });
}

}  // extern "C"
