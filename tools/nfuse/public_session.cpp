#include "public_session.h"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "cli_flags.h"
#include "ir/dtype.h"

namespace nfuse::cli {
namespace {

Status invalid(const std::string& message) { return Status(NFUSE_INVALID_ARGUMENT, message); }

// The backends a flag may name, by their names.
Status backend_of(const std::string& name, const char* flag, nfuse_backend* out) {
  for (nfuse_backend b : {NFUSE_BACKEND_AUTO, NFUSE_BACKEND_REF, NFUSE_BACKEND_CPU, NFUSE_BACKEND_FUSION}) {
    if (name == nfuse_backend_name(b)) {
      *out = b;
      return Status();
    }
  }
  return invalid(std::string(flag) + ": unknown backend '" + name + "' (known: auto, cpu, fusion, ref)");
}

Status options_of(const CommonArgs& args, SessionOptions* o) {
  o->backend(args.backend).threads(args.threads).optimize(!args.no_optimize);
  o->require_full_offload(args.require_full_offload).tile_rows(args.tile_rows);
  if (!args.device_profile.empty()) o->device_profile(args.device_profile);
  for (const std::string& name : args.outputs) o->keep_output(name);
  std::vector<nfuse_backend> order;
  for (const std::string& name : args.prefer) {
    nfuse_backend b;
    Status s = backend_of(name, "--prefer", &b);
    if (!s.ok()) return s;
    order.push_back(b);
  }
  if (!order.empty()) o->prefer(order);
  std::map<std::string, std::string> pins;
  const std::string pin_error = parse_pin_flags(args.pins, &pins);
  if (!pin_error.empty()) return invalid(pin_error);
  for (const auto& [node, name] : pins) {
    nfuse_backend b;
    Status s = backend_of(name, "--pin", &b);
    if (!s.ok()) return s;
    o->pin(node, b);
  }
  for (const std::string& op : args.deny) o->deny(op);
  return Status();
}

// The library's element type of a public dtype: both name their types alike ("f32", "u8").
// ir/dtype.h is plain C++ (no Status), so it sits beside the public header without a clash.
ir::DType ir_dtype(nfuse_dtype d) {
  for (int i = 1; i <= static_cast<int>(ir::DType::kBool); ++i)
    if (ir::dtype_name(static_cast<ir::DType>(i)) == nfuse_dtype_name(d)) return static_cast<ir::DType>(i);
  return ir::DType::kUndefined;
}

// Floats uniform in [0, 1) from `rng`; other dtypes stay zero.
void fill_seeded(Tensor& t, std::mt19937& rng) {
  const ir::DType d = ir_dtype(t.dtype());
  if (!ir::dtype_is_float(d)) return;
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const auto n = static_cast<int64_t>(t.byte_size() / ir::dtype_size(d));
  for (int64_t i = 0; i < n; ++i) ir::store_from_double(d, t.data(), i, uniform(rng));
}

Status make_inputs(const std::map<std::string, std::string>& files,
                   const std::map<std::string, std::vector<int64_t>>& shapes, ApiSession* s) {
  auto known = [s](const std::string& name) {
    for (const IoInfo& in : s->inputs)
      if (in.name == name) return true;
    return false;
  };
  for (const auto& [name, file] : files)
    if (!known(name)) return invalid("--input: the model has no input named '" + name + "'");
  for (const auto& [name, dims] : shapes)
    if (!known(name)) return invalid("--shape: the model has no input named '" + name + "'");
  std::mt19937 rng(42);
  for (const IoInfo& in : s->inputs) {
    auto f = files.find(in.name);
    Result<Tensor> t = Status();
    if (f != files.end()) {
      t = Tensor::load_npy(f->second);
    } else {
      std::vector<int64_t> dims = in.dims;
      for (int64_t& d : dims) d = d < 0 ? 1 : d;
      auto sh = shapes.find(in.name);
      if (sh != shapes.end()) {
        dims = sh->second;
      } else if (dims != in.dims) {
        s->assumed.push_back({in.name, in.dims, in.symbols});
      }
      t = Tensor::create(in.dtype, dims);
      if (t.ok()) fill_seeded(*t, rng);
    }
    if (!t.ok()) return t.status();
    s->input_tensors.push_back(std::move(*t));
    s->input_seeded.push_back(f == files.end());
  }
  for (size_t i = 0; i < s->inputs.size(); ++i) s->feeds.emplace_back(s->inputs[i].name, &s->input_tensors[i]);
  return Status();
}

}  // namespace

Status open_api_session(const CommonArgs& args, const std::vector<std::string>& input_flags, ApiSession* out,
                        const Runtime* shared) {
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string error = parse_shape_flags(args.shapes, &shapes);
  if (!error.empty()) return invalid(error);
  std::map<std::string, std::string> files;
  error = parse_input_flags(input_flags, &files);
  if (!error.empty()) return invalid(error);
  SessionOptions options;
  Status s = options_of(args, &options);
  if (!s.ok()) return s;
  // Planned (and weights packed) while the session is created, as for a static model: the
  // open time is the time to a session ready to run these shapes.
  for (const auto& [name, dims] : shapes) options.input_shape(name, dims);
  const auto t0 = std::chrono::steady_clock::now();
  if (!shared) {
    auto rt = Runtime::create();
    if (!rt.ok()) return rt.status();
    out->runtime = std::move(*rt);
    s = out->runtime.set_context_compat(args.compat == "strict" ? NFUSE_COMPAT_STRICT : NFUSE_COMPAT_PERMISSIVE);
    if (!s.ok()) return s;
  }
  const Runtime& runtime = shared ? *shared : out->runtime;
  auto model = Model::load(runtime, args.model);
  if (!model.ok()) return model.status();
  out->model = std::move(*model);
  auto session = Session::create(runtime, out->model, options);
  if (!session.ok()) return session.status();
  out->session = std::move(*session);
  out->open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  auto is_context = out->model.is_context();
  if (is_context.ok() && *is_context) {  // say once (outside the timed open) why a binary may run below its best here
    nfuse_context_validity validity = NFUSE_CONTEXT_VALID;
    char* reasons = nullptr;
    Status checked(nfuse_context_check_file(args.model.c_str(), nullptr, &validity, &reasons));
    if (checked.ok() && validity == NFUSE_CONTEXT_SUBOPTIMAL && reasons)
      std::fprintf(stderr, "nfuse: warning: context binary is suboptimal on this device: %s\n", reasons);
    nfuse_string_release(reasons);
  }
  auto backend = out->session.backend();
  out->backend = backend.ok() ? *backend : args.backend;
  out->from_context = is_context.ok() && *is_context;
  auto inputs = out->session.inputs();
  if (!inputs.ok()) return inputs.status();
  out->inputs = std::move(*inputs);
  auto outputs = out->session.outputs();
  if (!outputs.ok()) return outputs.status();
  out->outputs = std::move(*outputs);
  return make_inputs(files, shapes, out);
}

int report_api(const Status& status) {
  std::fprintf(stderr, "nfuse: error: %s\n", status.to_string().c_str());
  return status.code() == NFUSE_INVALID_ARGUMENT ? 2 : 1;
}

int report_run_failure(const Status& status, const ApiSession& s) {
  return report_api(Status(status.code(), with_assumed_dims(status.message(), s.assumed)));
}

double element_as_double(const Tensor& t, size_t i) {
  const ir::DType d = ir_dtype(t.dtype());
  if (d == ir::DType::kUndefined) return 0.0;
  return ir::load_as_double(d, const_cast<Tensor&>(t).data(), static_cast<int64_t>(i));
}

Status write_run_stats(Session& session, std::FILE* file, const char* phase) {
  auto text = session.last_run_stats();
  if (!text.ok()) return text.status();
  nlohmann::json j = nlohmann::json::parse(*text);
  j["phase"] = phase;
  const std::string line = j.dump() + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file) != line.size())
    return Status(NFUSE_UNAVAILABLE, "cannot write the run statistics");
  return Status();
}

Status write_trace(Session& session, const std::string& path) {
  auto text = session.trace();
  if (!text.ok()) return text.status();
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) return Status(NFUSE_UNAVAILABLE, "cannot open '" + path + "' for the trace");
  const bool written = std::fwrite(text->data(), 1, text->size(), f) == text->size();
  if (std::fclose(f) != 0 || !written) return Status(NFUSE_UNAVAILABLE, "cannot write the trace to '" + path + "'");
  return Status();
}

}  // namespace nfuse::cli
