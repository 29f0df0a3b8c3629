#include "quant/mixed_precision.h"

#include <algorithm>
#include <chrono>

#include "quant/calib_data.h"
#include "runtime/session.h"

namespace nfuse::quant {

Result<PromoteTo> parse_promote_to(std::string_view name) {
  if (name == "int16") return PromoteTo::kInt16;
  if (name == "float") return PromoteTo::kFloat;
  return invalid_argument("--promote: '" + std::string(name) + "' is not int16 or float");
}

const char* promote_to_name(PromoteTo p) { return p == PromoteTo::kInt16 ? "int16" : "float"; }

Result<std::vector<LayerSensitivity>> layer_sensitivity(const QuantizeResult& q, const std::vector<ir::Tensor>& batches,
                                                        const std::vector<ir::Tensor>& reference, int threads) {
  std::vector<LayerSensitivity> out;
  for (const auto& l : q.plan.layers) {
    QdqSelection s;
    s.act = q.selection.act;
    s.only = true;
    s.only_layers = {l.node_output};
    NFUSE_ASSIGN_OR_RETURN(QdqGraph g, build_qdq_graph(*q.fp32, q.plan, q.calibrated, s));
    NFUSE_ASSIGN_OR_RETURN(ErrorSummary e, evaluate_output(*g.graph, batches, reference, threads));
    out.push_back({l.node_output, e});
  }
  return out;
}

Result<MixedPrecisionResult> promote_until(QuantizeResult& q, const std::vector<LayerSensitivity>& sensitivity,
                                           const std::vector<ir::Tensor>& batches,
                                           const std::vector<ir::Tensor>& reference, double target_cosine,
                                           PromoteTo to, int threads) {
  MixedPrecisionResult r;
  r.target_cosine = target_cosine;
  NFUSE_ASSIGN_OR_RETURN(r.before, evaluate_output(*q.qdq, batches, reference, threads, &r.worst_before));
  ++r.evaluations;
  r.after = r.before;
  r.worst_after = r.worst_before;
  // Most sensitive first; ties keep graph order.
  std::vector<const LayerSensitivity*> order;
  for (const auto& s : sensitivity) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const LayerSensitivity* a, const LayerSensitivity* b) {
    return a->output.cosine < b->output.cosine;
  });
  std::map<std::string, const PlannedLayer*> layers;
  for (const auto& l : q.plan.layers) layers[l.node_output] = &l;
  const QdqSelection base = q.selection;
  // The selection promoting the first k layers of `order`.
  auto select = [&](size_t k) {
    QdqSelection s = base;
    for (size_t i = 0; i < k; ++i) (to == PromoteTo::kInt16 ? s.int16_layers : s.float_layers).insert(order[i]->node_output);
    return s;
  };
  struct Eval {
    ErrorSummary all;
    double worst = 1.0;
  };
  auto evaluate = [&](size_t k) -> Result<Eval> {
    NFUSE_RETURN_IF_ERROR(q.rebuild(select(k)), "mixed precision");
    Eval e;
    NFUSE_ASSIGN_OR_RETURN(e.all, evaluate_output(*q.qdq, batches, reference, threads, &e.worst));
    ++r.evaluations;
    return e;
  };
  // Growing steps until the target is met, then a bisection inside the last step for the
  // shortest prefix that still meets it.
  size_t lo = 0, hi = 0;  // prefix lo misses the target; hi is the current candidate
  Eval at_hi{r.before, r.worst_before};
  std::vector<double> worst_at(order.size() + 1, -1.0);
  worst_at[0] = r.worst_before;
  while (at_hi.worst < target_cosine && hi < order.size()) {
    lo = hi;
    hi = std::min(order.size(), hi + std::max<size_t>(1, hi / 2));
    NFUSE_ASSIGN_OR_RETURN(at_hi, evaluate(hi));
    worst_at[hi] = at_hi.worst;
  }
  if (at_hi.worst >= target_cosine) {
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      NFUSE_ASSIGN_OR_RETURN(Eval e, evaluate(mid));
      worst_at[mid] = e.worst;
      if (e.worst >= target_cosine) {
        hi = mid;
        at_hi = e;
      } else {
        lo = mid;
      }
    }
  }
  NFUSE_RETURN_IF_ERROR(q.rebuild(select(hi)), "mixed precision");
  r.after = at_hi.all;
  r.worst_after = at_hi.worst;
  double last = r.worst_before;
  for (size_t i = 0; i < hi; ++i) {
    const PlannedLayer& l = *layers.at(order[i]->node_output);
    if (worst_at[i + 1] >= 0.0) last = worst_at[i + 1];
    r.promotions.push_back({l.node_output, l.name, l.op, to, order[i]->output.cosine, last});
  }
  r.target_met = r.worst_after >= target_cosine;
  return r;
}

std::vector<ir::Tensor> first_samples(const std::vector<ir::Tensor>& calibration, int64_t max_samples,
                                      int64_t max_elements, int64_t fixed_batch) {
  std::vector<ir::Tensor> out;
  if (calibration.empty()) return out;
  const ir::Tensor& b0 = calibration[0];
  const int64_t per_sample = b0.rank() > 0 && b0.dim(0) > 0 ? b0.numel() / b0.dim(0) : b0.numel();
  int64_t samples = std::clamp<int64_t>(max_elements / std::max<int64_t>(per_sample, 1), 1, max_samples);
  if (fixed_batch > 1) {
    // The model runs only whole batches; evaluate_output judges their rows one by one.
    for (size_t i = 0; i < calibration.size() && (out.empty() || samples > 0); ++i) {
      out.push_back(calibration[i]);
      samples -= fixed_batch;
    }
    return out;
  }
  // One sample per batch, so each is judged on its own.
  for (const auto& b : calibration) {
    for (const ir::Tensor& one : split_batches(b, 1)) {
      if (samples-- <= 0) return out;
      out.push_back(one);
    }
  }
  return out;
}

Result<double> median_ms(const ir::Graph& g, const ir::Tensor& input, int runs, int threads) {
  NFUSE_ASSIGN_OR_RETURN(auto copy, clone_graph(g));
  const std::string input_name = g.inputs()[0]->name;
  runtime::SessionOptions so;
  so.backend = "cpu";
  so.threads = threads;
  NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(copy), so));
  std::vector<double> ms;
  for (int i = 0; i < runs + 3; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    NFUSE_ASSIGN_OR_RETURN(auto out, session->run({{input_name, input}}));
    const auto t1 = std::chrono::steady_clock::now();
    if (i >= 3) ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms.empty() ? 0.0 : ms[ms.size() / 2];
}

}  // namespace nfuse::quant
