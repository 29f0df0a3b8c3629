#include "public_session.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <random>

#include "cli_flags.h"

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

uint16_t float_to_16(float f, bool bfloat) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if (bfloat) return static_cast<uint16_t>((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);  // [0, 1): no NaN
  // IEEE half for values in [0, 1): normal or subnormal, round to nearest even.
  const int exp = static_cast<int>((u >> 23) & 0xFF) - 127 + 15;
  uint32_t mant = u & 0x7FFFFF;
  if (f == 0.0f) return 0;
  if (exp <= 0) {
    mant |= 0x800000;
    const int shift = 14 - exp;
    if (shift > 24) return 0;  // below half the smallest subnormal
    const uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    return static_cast<uint16_t>(half + (rem > mid || (rem == mid && (half & 1u))));
  }
  const uint32_t half = (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1FFF;
  return static_cast<uint16_t>(half + (rem > 0x1000 || (rem == 0x1000 && (half & 1u))));
}

// Floats uniform in [0, 1) from `rng`; other dtypes stay zero.
void fill_seeded(Tensor& t, std::mt19937& rng) {
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const nfuse_dtype d = t.dtype();
  const size_t n = nfuse_dtype_size(d) ? t.byte_size() / nfuse_dtype_size(d) : 0;
  void* p = t.data();
  for (size_t i = 0; i < n; ++i) {
    switch (d) {
      case NFUSE_DTYPE_FLOAT32: static_cast<float*>(p)[i] = uniform(rng); break;
      case NFUSE_DTYPE_FLOAT64: static_cast<double*>(p)[i] = uniform(rng); break;
      case NFUSE_DTYPE_FLOAT16: static_cast<uint16_t*>(p)[i] = float_to_16(uniform(rng), false); break;
      case NFUSE_DTYPE_BFLOAT16: static_cast<uint16_t*>(p)[i] = float_to_16(uniform(rng), true); break;
      default: return;
    }
  }
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
      if (sh != shapes.end()) dims = sh->second;
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

Status open_api_session(const CommonArgs& args, const std::vector<std::string>& input_flags, ApiSession* out) {
  std::map<std::string, std::vector<int64_t>> shapes;
  std::string error = parse_shape_flags(args.shapes, &shapes);
  if (!error.empty()) return invalid(error);
  std::map<std::string, std::string> files;
  error = parse_input_flags(input_flags, &files);
  if (!error.empty()) return invalid(error);
  SessionOptions options;
  Status s = options_of(args, &options);
  if (!s.ok()) return s;
  const auto t0 = std::chrono::steady_clock::now();
  auto rt = Runtime::create();
  if (!rt.ok()) return rt.status();
  out->runtime = std::move(*rt);
  auto model = Model::load(out->runtime, args.model);
  if (!model.ok()) return model.status();
  out->model = std::move(*model);
  auto session = Session::create(out->runtime, out->model, options);
  if (!session.ok()) return session.status();
  out->session = std::move(*session);
  out->open_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
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

double element_as_double(const Tensor& t, size_t i) {
  const void* p = const_cast<Tensor&>(t).data();
  switch (t.dtype()) {
    case NFUSE_DTYPE_FLOAT32: return static_cast<const float*>(p)[i];
    case NFUSE_DTYPE_FLOAT64: return static_cast<const double*>(p)[i];
    case NFUSE_DTYPE_UINT8: return static_cast<const uint8_t*>(p)[i];
    case NFUSE_DTYPE_INT8: return static_cast<const int8_t*>(p)[i];
    case NFUSE_DTYPE_UINT16: return static_cast<const uint16_t*>(p)[i];
    case NFUSE_DTYPE_INT16: return static_cast<const int16_t*>(p)[i];
    case NFUSE_DTYPE_INT32: return static_cast<const int32_t*>(p)[i];
    case NFUSE_DTYPE_UINT32: return static_cast<const uint32_t*>(p)[i];
    case NFUSE_DTYPE_INT64: return static_cast<double>(static_cast<const int64_t*>(p)[i]);
    case NFUSE_DTYPE_UINT64: return static_cast<double>(static_cast<const uint64_t*>(p)[i]);
    case NFUSE_DTYPE_BOOL: return static_cast<const bool*>(p)[i] ? 1.0 : 0.0;
    case NFUSE_DTYPE_FLOAT16: {
      const uint16_t h = static_cast<const uint16_t*>(p)[i];
      const int e = (h >> 10) & 0x1F, m = h & 0x3FF;
      const double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : std::ldexp(m + 1024, e - 25);
      return (h & 0x8000) ? -v : v;
    }
    case NFUSE_DTYPE_BFLOAT16: {
      const uint32_t u = static_cast<uint32_t>(static_cast<const uint16_t*>(p)[i]) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    default: return 0.0;
  }
}

}  // namespace nfuse::cli
