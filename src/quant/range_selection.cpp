#include "quant/range_selection.h"

#include <cmath>

#include "quant/quant_math.h"
#include "runtime/session.h"

namespace nfuse::quant {

namespace {

bool same_range(const Range& a, const Range& b) { return a.min == b.min && a.max == b.max; }

// A Conv / Gemm / MatMul whose only non-constant input is input 0: it can be run on its own.
bool runnable_alone(const ir::Node& n) {
  if (!n.domain.empty() || (n.op_type != "Conv" && n.op_type != "Gemm" && n.op_type != "MatMul")) return false;
  if (!n.implicit_inputs.empty() || n.num_outputs() != 1 || !n.input(0) || n.input(0)->constant) return false;
  for (int i = 1; i < n.num_inputs(); ++i) {
    if (n.has_input(i) && !n.input(i)->constant) return false;
  }
  return true;
}

// `n` alone in a graph of its own (its constants shared, not copied), on the cpu backend.
Result<std::unique_ptr<runtime::Session>> reader_session(const ir::Graph& g, const ir::Node& n, int threads) {
  auto r = std::make_unique<ir::Graph>();
  r->name = "range_reader";
  r->opsets = g.opsets;
  std::vector<ir::Value*> inputs;
  for (int i = 0; i < n.num_inputs(); ++i) {
    const ir::Value* v = n.input(i);
    if (!v) {
      inputs.push_back(nullptr);
      continue;
    }
    NFUSE_ASSIGN_OR_RETURN(ir::Value * copy, r->add_value(v->name, v->type));
    copy->constant = v->constant;
    if (!v->constant) r->inputs().push_back(copy);
    inputs.push_back(copy);
  }
  NFUSE_ASSIGN_OR_RETURN(ir::Value * out, r->add_value(n.output(0)->name, n.output(0)->type));
  ir::Node* copy = r->add_node(n.op_type, n.name, inputs, {out}, n.attrs);
  copy->opset = n.opset;
  r->outputs().push_back(out);
  r->relink();
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.threads = threads;
  so.optimize = false;
  return runtime::Session::create(std::move(r), so);
}

template <typename Q>
void fake_quantize_all(const float* x, float* out, size_t n, float scale, int64_t zero_point) {
  for (size_t i = 0; i < n; ++i) out[i] = fake_quantize<Q>(x[i], scale, zero_point);
}

Status fake_quantize_tensor(const ir::Tensor& x, const Range& range, ActScheme act, ir::Tensor* out) {
  NFUSE_ASSIGN_OR_RETURN(ir::QuantParams p, activation_params(range, act));
  const size_t n = static_cast<size_t>(x.numel());
  if (p.storage == ir::DType::kU8) {
    fake_quantize_all<uint8_t>(x.data<float>(), out->data<float>(), n, p.scale[0], p.zero_point[0]);
  } else if (p.storage == ir::DType::kI8) {
    fake_quantize_all<int8_t>(x.data<float>(), out->data<float>(), n, p.scale[0], p.zero_point[0]);
  } else {
    return internal_error("range selection: 8-bit activations expected");
  }
  return ok_status();
}

double squared_error(const ir::Tensor& a, const ir::Tensor& b) {
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  double s = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double d = static_cast<double>(pa[i]) - pb[i];
    s += d * d;
  }
  return s;
}

double energy(const ir::Tensor& a) {
  const float* p = a.data<float>();
  double s = 0.0;
  for (int64_t i = 0; i < a.numel(); ++i) s += static_cast<double>(p[i]) * p[i];
  return s;
}

}  // namespace

Result<std::vector<RangeCandidate>> range_candidates(const Observer& observer, const MethodOptions& options) {
  std::vector<RangeCandidate> out;
  for (Method m : kAutoCandidateMethods) {
    NFUSE_ASSIGN_OR_RETURN(Range r, observer.range(m, options));
    bool seen = false;
    for (const auto& c : out) seen = seen || same_range(c.range, r);
    if (!seen) out.push_back({m, r});
  }
  return out;
}

RangeSelector::~RangeSelector() = default;

Result<std::unique_ptr<RangeSelector>> RangeSelector::create(
    const ir::Graph& g, const QuantPlan& plan, ActScheme act,
    std::map<std::string, std::vector<RangeCandidate>> candidates, int threads) {
  if (act == ActScheme::kS16Symmetric) return internal_error("range selection chooses 8-bit ranges only");
  std::unique_ptr<RangeSelector> s(new RangeSelector());
  s->act_ = act;
  for (auto& [name, cands] : candidates) {
    if (cands.size() < 2) continue;
    Scored sc;
    sc.candidates = std::move(cands);
    for (const auto& l : plan.layers) {
      for (const auto& in : l.inputs) {
        const auto shared = plan.shared.find(in);
        const bool direct = in == name;
        if (!direct && !(shared != plan.shared.end() && shared->second == name)) continue;
        Reader reader;
        reader.label = l.name;
        const ir::Node* n = direct && l.kind == LayerKind::kWeighted ? find_layer_node(g, l) : nullptr;
        if (n && runnable_alone(*n) && n->input(0)->name == name) {
          auto session = reader_session(g, *n, threads);
          if (!session.ok()) return session.status().with_context("range selection: reader " + l.name);
          reader.session = std::move(*session);
        }
        sc.readers.push_back(std::move(reader));
        break;  // one reader per layer, however many of its inputs are T
      }
    }
    if (sc.readers.empty()) sc.readers.emplace_back();  // read by float ops only: its own error
    for (auto& r : sc.readers) r.error.assign(sc.candidates.size(), 0.0);
    s->scored_.emplace(name, std::move(sc));
  }
  return s;
}

std::vector<std::string> RangeSelector::needed() const {
  std::vector<std::string> out;
  for (const auto& [name, sc] : scored_) out.push_back(name);
  return out;
}

Status RangeSelector::observe(const std::map<std::string, const ir::Tensor*>& tensors) {
  for (auto& [name, sc] : scored_) {
    const auto it = tensors.find(name);
    if (it == tensors.end() || !it->second) return internal_error("range selection: '" + name + "' not observed");
    const ir::Tensor& x = *it->second;
    if (x.dtype() != ir::DType::kF32) return unsupported("range selection: '" + name + "' is not float32");
    const double x_energy = energy(x);
    // The float outputs of the readers that run, then every candidate against them.
    std::vector<ir::Tensor> reference(sc.readers.size());
    for (size_t r = 0; r < sc.readers.size(); ++r) {
      Reader& reader = sc.readers[r];
      if (!reader.session) {
        reader.energy += x_energy;
        continue;
      }
      auto y = reader.session->run({{reader.session->graph().inputs()[0]->name, x}});
      if (!y.ok()) return y.status().with_context("range selection: reader " + reader.label + " of '" + name + "'");
      reference[r] = std::move((*y)[0]);
      reader.energy += energy(reference[r]);
    }
    NFUSE_ASSIGN_OR_RETURN(ir::Tensor xq, ir::Tensor::try_allocate(ir::DType::kF32, x.dims()));
    for (size_t k = 0; k < sc.candidates.size(); ++k) {
      NFUSE_RETURN_IF_ERROR(fake_quantize_tensor(x, sc.candidates[k].range, act_, &xq),
                            "range selection: '" + name + "'");
      double own = -1.0;
      for (size_t r = 0; r < sc.readers.size(); ++r) {
        Reader& reader = sc.readers[r];
        if (!reader.session) {
          if (own < 0.0) own = squared_error(x, xq);
          reader.error[k] += own;
          continue;
        }
        auto y = reader.session->run({{reader.session->graph().inputs()[0]->name, xq}});
        if (!y.ok()) return y.status().with_context("range selection: reader " + reader.label + " of '" + name + "'");
        reader.error[k] += squared_error(reference[r], (*y)[0]);
      }
    }
  }
  return ok_status();
}

std::vector<double> RangeSelector::scores(const std::string& tensor) const {
  const Scored& sc = scored_.at(tensor);
  std::vector<double> out(sc.candidates.size(), 0.0);
  for (const auto& r : sc.readers) {
    if (!(r.energy > 0.0)) continue;  // an all-zero output says nothing about the range
    for (size_t k = 0; k < out.size(); ++k) out[k] += r.error[k] / r.energy;
  }
  return out;
}

std::map<std::string, size_t> RangeSelector::choose() const {
  std::map<std::string, size_t> out;
  for (const auto& [name, sc] : scored_) {
    const std::vector<double> s = scores(name);
    size_t best = 0;
    for (size_t k = 1; k < s.size(); ++k) {
      if (s[k] < s[best]) best = k;
    }
    out[name] = best;
  }
  return out;
}

}  // namespace nfuse::quant
