#include "quant/mixed_precision.h"

#include <algorithm>
#include <chrono>

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
  NFUSE_ASSIGN_OR_RETURN(r.before, evaluate_output(*q.qdq, batches, reference, threads));
  ++r.evaluations;
  r.after = r.before;
  // Most sensitive first; ties keep graph order.
  std::vector<const LayerSensitivity*> order;
  for (const auto& s : sensitivity) order.push_back(&s);
  std::stable_sort(order.begin(), order.end(), [](const LayerSensitivity* a, const LayerSensitivity* b) {
    return a->output.cosine < b->output.cosine;
  });
  std::map<std::string, const PlannedLayer*> layers;
  for (const auto& l : q.plan.layers) layers[l.node_output] = &l;
  QdqSelection s = q.selection;
  size_t next = 0;
  while (r.after.cosine < target_cosine && next < order.size()) {
    const size_t step = std::max<size_t>(1, r.promotions.size() / 2);
    const size_t first = r.promotions.size();
    for (size_t i = 0; i < step && next < order.size(); ++i, ++next) {
      const LayerSensitivity& ls = *order[next];
      const PlannedLayer& l = *layers.at(ls.node_output);
      (to == PromoteTo::kInt16 ? s.int16_layers : s.float_layers).insert(l.node_output);
      r.promotions.push_back({l.node_output, l.name, l.op, to, ls.output.cosine, 0.0});
    }
    NFUSE_RETURN_IF_ERROR(q.rebuild(s), "mixed precision");
    NFUSE_ASSIGN_OR_RETURN(r.after, evaluate_output(*q.qdq, batches, reference, threads));
    ++r.evaluations;
    for (size_t i = first; i < r.promotions.size(); ++i) r.promotions[i].output_cosine_after = r.after.cosine;
  }
  r.target_met = r.after.cosine >= target_cosine;
  return r;
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
