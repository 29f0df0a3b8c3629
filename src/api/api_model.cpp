// C API: runtimes (backend registry, log sink, shared workers) and models (ONNX from a file or from memory).
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "api/api_objects.h"
#include "backends/backend.h"
#include "compile/context/context_format.h"
#include "core/aligned_storage.h"
#include "frontend/onnx/onnx_importer.h"

void nfuse_runtime::log(nfuse_log_level level, const std::string& message) {
  std::lock_guard<std::mutex> lock(log_mutex);
  if (log_fn && level >= log_level) log_fn(log_user, level, message.c_str());
}

std::shared_ptr<nfuse::ThreadPool> nfuse_runtime::workers(int threads) {
  threads = std::max(1, threads);
  std::lock_guard<std::mutex> lock(workers_mutex_);
  std::shared_ptr<nfuse::ThreadPool>& pool = workers_[threads];
  if (!pool) pool = std::make_shared<nfuse::ThreadPool>(threads);
  return pool;
}

namespace nfuse::api {
namespace {

// The file's bytes; kUnavailable naming the path when it cannot be read.
Result<std::string> read_file(const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return invalid_argument("'" + path + "' is a directory, not a model file");
  std::ifstream f(path, std::ios::binary);
  if (!f) return unavailable("cannot open '" + path + "'");
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (f.bad()) return unavailable("cannot read '" + path + "'");
  return bytes;
}

Status load(std::unique_ptr<nfuse_model> model, nfuse_model** out) {
  frontend::onnx::ImportOptions io;
  io.external_data = model->external_data;
  NFUSE_ASSIGN_OR_RETURN(model->first_graph, frontend::onnx::load_model_from_bytes(
                                                 model->bytes.data(), model->bytes.size(), model->base_dir, io));
  publish(std::move(model), out);
  return ok_status();
}

}  // namespace

// A graph of its own for a new session: the one parsed at load, else a fresh import (or
// decoding, for a context binary).
Result<std::unique_ptr<ir::Graph>> take_graph(const nfuse_model& model) {
  if (model.context) return model.context->graph();
  {
    std::lock_guard<std::mutex> lock(model.mutex);
    if (model.first_graph) return std::move(model.first_graph);
  }
  frontend::onnx::ImportOptions io;
  io.external_data = model.external_data;
  return frontend::onnx::load_model_from_bytes(model.bytes.data(), model.bytes.size(), model.base_dir, io);
}

}  // namespace nfuse::api

using namespace nfuse;
using api::check_handle;
using api::check_out;
using api::guard;

extern "C" {

nfuse_status* nfuse_runtime_create(nfuse_runtime** out) {
  return api::create("nfuse_runtime_create", out,
                     [](nfuse_runtime& rt) { rt.backend_names = backends::BackendRegistry::global().names(); });
}

void nfuse_runtime_release(nfuse_runtime* runtime) { api::retire(runtime); }

nfuse_status* nfuse_runtime_set_log_sink(nfuse_runtime* runtime, nfuse_log_level min_level, nfuse_log_fn fn,
                                         void* user_data) {
  return guard("nfuse_runtime_set_log_sink", [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle("nfuse_runtime_set_log_sink", "runtime", runtime));
    const long long level = api::enum_bits(min_level);
    if (level < NFUSE_LOG_VERBOSE || level > NFUSE_LOG_ERROR)
      return invalid_argument("nfuse_runtime_set_log_sink: unknown log level " + std::to_string(level));
    std::lock_guard<std::mutex> lock(runtime->log_mutex);
    runtime->log_level = min_level;
    runtime->log_fn = fn;
    runtime->log_user = user_data;
    return ok_status();
  });
}

nfuse_status* nfuse_runtime_backend_count(const nfuse_runtime* runtime, size_t* out) {
  return api::get("nfuse_runtime_backend_count", "runtime", runtime, out,
                  [](const nfuse_runtime& rt) { return rt.backend_names.size(); });
}

nfuse_status* nfuse_runtime_backend_name(const nfuse_runtime* runtime, size_t index, const char** out) {
  return guard("nfuse_runtime_backend_name", [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle("nfuse_runtime_backend_name", "runtime", runtime));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out("nfuse_runtime_backend_name", "out", out));
    if (index >= runtime->backend_names.size())
      return invalid_argument("nfuse_runtime_backend_name: index " + std::to_string(index) + " out of range (" +
                              std::to_string(runtime->backend_names.size()) + " backends)");
    *out = runtime->backend_names[index].c_str();
    return ok_status();
  });
}

nfuse_status* nfuse_model_load_file(nfuse_runtime* runtime, const char* path, nfuse_model** out) {
  return guard("nfuse_model_load_file", [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out("nfuse_model_load_file", "out", out));
    *out = nullptr;
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle("nfuse_model_load_file", "runtime", runtime));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out("nfuse_model_load_file", "path", path));
    auto model = std::make_unique<nfuse_model>();
    if (runtime::is_context_file(path)) {
      runtime::ContextLoadOptions lo;
      lo.compat = runtime->context_compat;
      NFUSE_ASSIGN_OR_RETURN(model->context, runtime::ContextModel::open_file(path, lo));
      api::publish(std::move(model), out);
      return ok_status();
    }
    NFUSE_ASSIGN_OR_RETURN(model->bytes, api::read_file(path));
    model->source_name = std::filesystem::path(path).filename().string();
    model->base_dir = std::filesystem::path(path).parent_path().string();
    if (model->base_dir.empty()) model->base_dir = ".";
    NFUSE_RETURN_IF_ERROR(api::load(std::move(model), out), std::string("loading '") + path + "'");
    return ok_status();
  });
}

nfuse_status* nfuse_model_load_memory(nfuse_runtime* runtime, const void* data, size_t size, nfuse_model** out) {
  return guard("nfuse_model_load_memory", [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out("nfuse_model_load_memory", "out", out));
    *out = nullptr;
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle("nfuse_model_load_memory", "runtime", runtime));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out("nfuse_model_load_memory", "data", data));
    if (size == 0) return invalid_argument("nfuse_model_load_memory: size is 0");
    auto model = std::make_unique<nfuse_model>();
    if (context::has_context_magic(data, size)) {  // copied: the caller's bytes are not retained
      auto copy = std::make_shared<AlignedFloats>();
      if (!copy->resize((size + sizeof(float) - 1) / sizeof(float)))
        return out_of_memory("nfuse_model_load_memory: " + std::to_string(size) + " bytes");
      std::memcpy(copy->data(), data, size);
      runtime::ContextLoadOptions lo;
      lo.compat = runtime->context_compat;
      NFUSE_ASSIGN_OR_RETURN(model->context, runtime::ContextModel::open_buffer(copy->data(), size, copy, lo));
      api::publish(std::move(model), out);
      return ok_status();
    }
    model->bytes.assign(static_cast<const char*>(data), size);
    model->base_dir = ".";
    model->external_data = false;  // a buffer has no folder: external data is refused, never looked up
    return api::load(std::move(model), out);
  });
}

nfuse_status* nfuse_model_load_context_buffer(nfuse_runtime* runtime, const void* data, size_t size,
                                              nfuse_model** out) {
  constexpr const char* fn = "nfuse_model_load_context_buffer";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "out", out));
    *out = nullptr;
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "runtime", runtime));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_out(fn, "data", data));
    auto model = std::make_unique<nfuse_model>();
    runtime::ContextLoadOptions lo;
    lo.compat = runtime->context_compat;
    NFUSE_ASSIGN_OR_RETURN(model->context, runtime::ContextModel::open_buffer(data, size, nullptr, lo));
    api::publish(std::move(model), out);
    return ok_status();
  });
}

nfuse_status* nfuse_model_is_context(const nfuse_model* model, int* out) {
  return api::get("nfuse_model_is_context", "model", model, out,
                  [](const nfuse_model& m) { return m.context ? 1 : 0; });
}

nfuse_status* nfuse_runtime_set_context_compat(nfuse_runtime* runtime, nfuse_compat_mode mode) {
  constexpr const char* fn = "nfuse_runtime_set_context_compat";
  return guard(fn, [&]() -> Status {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_handle(fn, "runtime", runtime));
    const long long bits = api::enum_bits(mode);
    if (bits != NFUSE_COMPAT_PERMISSIVE && bits != NFUSE_COMPAT_STRICT)
      return invalid_argument(std::string(fn) + ": unknown mode " + std::to_string(bits));
    runtime->context_compat =
        mode == NFUSE_COMPAT_STRICT ? context::CompatMode::kStrict : context::CompatMode::kPermissive;
    return ok_status();
  });
}

void nfuse_model_release(nfuse_model* model) { api::retire(model); }

}  // extern "C"
