// C API: zero-copy I/O. Caller memory bound to inputs and outputs once, read and written in place
// run after run; what could not be is copied, counted and logged once per output.
#include "api/api_objects.h"

using namespace nfuse;
using api::check_handle;
using api::check_out;
using api::guard;

extern "C" {

nfuse_status* nfuse_session_bind_input(nfuse_session* session, const char* name, const nfuse_tensor* tensor) {
  constexpr const char* fn = "nfuse_session_bind_input";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "name", name));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "tensor", tensor));
    std::lock_guard<std::mutex> lock(session->mutex);
    NFUSE_RETURN_IF_ERROR_PLAIN(api::io_index(fn, session->inputs, name, "input").status());
    session->bound_inputs[name] = tensor->tensor;
    return ok_status();
  });
}

nfuse_status* nfuse_session_bind_output(nfuse_session* session, const char* name, nfuse_tensor* tensor) {
  constexpr const char* fn = "nfuse_session_bind_output";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "name", name));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "tensor", tensor));
    std::lock_guard<std::mutex> lock(session->mutex);
    NFUSE_ASSIGN_OR_RETURN(size_t i, api::io_index(fn, session->outputs, name, "output"));
    session->bound_outputs.resize(session->outputs.size());
    session->bound_outputs[i] = tensor->tensor;
    session->copy_logged.erase(name);  // a new buffer may qualify where the old one did not
    return ok_status();
  });
}

nfuse_status* nfuse_session_clear_bindings(nfuse_session* session) {
  constexpr const char* fn = "nfuse_session_clear_bindings";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    std::lock_guard<std::mutex> lock(session->mutex);
    session->bound_inputs.clear();
    session->bound_outputs.clear();
    session->copy_logged.clear();
    return ok_status();
  });
}

nfuse_status* nfuse_session_run_bound(nfuse_session* session, const nfuse_run_options* run_options) {
  constexpr const char* fn = "nfuse_session_run_bound";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    if (run_options) NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "run_options", run_options));
    std::unique_lock<std::mutex> lock(session->mutex);
    nfuse_session& s = *session;
    runtime::NamedTensors named;
    for (const nfuse_io_info& in : s.inputs) {
      auto it = s.bound_inputs.find(in.name);
      if (it == s.bound_inputs.end())
        return invalid_argument(std::string(fn) + ": input '" + in.name + "' is not bound (nfuse_session_bind_input)");
      named.emplace_back(in.name, it->second);
    }
    std::vector<ir::Tensor*> targets(s.outputs.size(), nullptr);
    for (size_t i = 0; i < s.bound_outputs.size(); ++i)
      if (!s.bound_outputs[i].empty()) targets[i] = &s.bound_outputs[i];
    s.last_copies = runtime::RunCopies();
    auto result = api::scheduled_run(s, lock, named, targets, &s.last_copies, run_options);
    if (result.ok())
      for (const auto& [name, t] : named) s.last_dims[name] = t.dims();
    if (!result.ok()) return result.status().with_context(fn);
    for (const auto& [name, why] : s.last_copies.reasons)
      if (s.copy_logged.insert(name).second)
        s.runtime->log(NFUSE_LOG_WARNING, "output '" + name + "' is copied into its bound buffer on every run: " + why);
    return ok_status();
  });
}

nfuse_status* nfuse_session_get_copied_bytes(const nfuse_session* session, uint64_t* input_bytes,
                                             uint64_t* output_bytes) {
  constexpr const char* fn = "nfuse_session_get_copied_bytes";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "session", session));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "input_bytes", input_bytes));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "output_bytes", output_bytes));
    std::lock_guard<std::mutex> lock(const_cast<nfuse_session*>(session)->mutex);
    *input_bytes = session->last_copies.input_bytes;
    *output_bytes = session->last_copies.output_bytes;
    return ok_status();
  });
}

}  // extern "C"
