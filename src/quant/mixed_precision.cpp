#include "quant/mixed_precision.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "ir/graph_copy.h"
#include "ir/infer_shapes.h"
#include "partition/node_macs.h"
#include "quant/calib_data.h"
#include "runtime/session.h"

namespace nfuse::quant {

Result<PromoteTo> parse_promote_to(std::string_view name) {
  if (name == "auto") return PromoteTo::kAuto;
  if (name == "int16") return PromoteTo::kInt16;
  if (name == "float") return PromoteTo::kFloat;
  return invalid_argument("--promote: '" + std::string(name) + "' is not auto, int16 or float");
}

const char* promote_to_name(PromoteTo p) {
  return p == PromoteTo::kAuto ? "auto" : p == PromoteTo::kInt16 ? "int16" : "float";
}

Result<std::vector<LayerSensitivity>> layer_sensitivity(const QuantizeResult& q, const std::vector<ir::Tensor>& batches,
                                                        const std::vector<ir::Tensor>& reference, int threads,
                                                        bool with_int16) {
  std::vector<LayerSensitivity> out;
  for (const auto& l : q.plan.layers) {
    QdqSelection s;
    s.act = q.selection.act;
    s.only = true;
    s.only_layers = {l.node_output};
    LayerSensitivity ls;
    ls.node_output = l.node_output;
    {
      NFUSE_ASSIGN_OR_RETURN(QdqGraph g, build_qdq_graph(*q.fp32, q.plan, q.calibrated, s));
      NFUSE_ASSIGN_OR_RETURN(ls.output, evaluate_output(*g.graph, batches, reference, threads, &ls.worst));
    }
    if (with_int16) {
      s.int16_layers = {l.node_output};
      NFUSE_ASSIGN_OR_RETURN(QdqGraph g, build_qdq_graph(*q.fp32, q.plan, q.calibrated, s));
      double worst16 = 1.0;
      NFUSE_ASSIGN_OR_RETURN(ErrorSummary e, evaluate_output(*g.graph, batches, reference, threads, &worst16));
      ls.int16 = e;
      ls.int16_worst = worst16;
    }
    out.push_back(std::move(ls));
  }
  return out;
}

Result<LayerWork> layer_work(const QuantizeResult& q, const std::vector<int64_t>& input_dims) {
  if (q.fp32->inputs().size() != 1) return unsupported("layer work: the model must have one input");
  NFUSE_ASSIGN_OR_RETURN(std::unique_ptr<ir::Graph> g, ir::copy_graph(*q.fp32, false));
  ir::Value* in = g->inputs()[0];
  std::vector<int64_t> dims = input_dims;
  const bool fixed = in->type.shape.rank_known() && in->type.shape.rank() > 0 && in->type.shape[0].is_static();
  if (!dims.empty() && !fixed) dims[0] = 1;
  in->type.shape = ir::Shape::from_dims(dims);
  NFUSE_RETURN_IF_ERROR(ir::infer_shapes(*g), "layer work: shapes at one sample");
  g->relink();
  const backends::PlanView view(*g);
  LayerWork w;
  std::set<const ir::Node*> planned;
  for (const auto& l : q.plan.layers) {
    const ir::Node* n = find_layer_node(*g, l);
    if (!n) return internal_error("layer work: layer '" + l.name + "' is missing from the copy");
    planned.insert(n);
    w.macs[l.node_output] = partition::node_macs(*n, view);
    int64_t elements = 0;
    std::vector<std::string> tensors = l.inputs;
    tensors.push_back(l.output);
    for (const auto& t : tensors) {
      const ir::Value* v = g->find_value(t);
      elements += (v ? view.type(v).shape.static_numel() : std::nullopt).value_or(0);
    }
    w.elements[l.node_output] = elements;
  }
  for (const auto& n : g->nodes()) {
    if (!planned.count(n.get()) && partition::is_mac_op(*n)) w.unplanned_macs += partition::node_macs(*n, view);
  }
  return w;
}

std::string layer_precision(const QuantizeResult& q, const PlannedLayer& l) {
  if (q.selection.float_layers.count(l.node_output)) return "float";
  if (q.selection.weights_only) return l.kind == LayerKind::kWeighted ? "w8 (float activations)" : "float";
  if (q.selection.int16_layers.count(l.node_output) || q.selection.act == ActScheme::kS16Symmetric) return "int16";
  return "int8";
}

MacShares mac_shares(const QuantizeResult& q, const LayerWork& work) {
  MacShares m;
  m.float32 = work.unplanned_macs;
  for (const auto& l : q.plan.layers) {
    const auto it = work.macs.find(l.node_output);
    const int64_t macs = it == work.macs.end() ? 0 : it->second;
    const std::string p = layer_precision(q, l);
    (p == "int8" ? m.int8 : p == "int16" ? m.int16 : m.float32) += macs;
  }
  return m;
}

Result<MacShares> executed_mac_shares(const ir::Graph& qdq, const std::vector<int64_t>& input_dims) {
  if (qdq.inputs().size() != 1) return unsupported("executed MACs: the model must have one input");
  NFUSE_ASSIGN_OR_RETURN(auto copy, clone_graph(qdq));
  const ir::Value* in = qdq.inputs()[0];
  std::vector<int64_t> dims = input_dims;
  const bool fixed = in->type.shape.rank_known() && in->type.shape.rank() > 0 && in->type.shape[0].is_static();
  if (!dims.empty() && !fixed) dims[0] = 1;
  runtime::SessionOptions so;
  so.backend = "cpu";
  NFUSE_ASSIGN_OR_RETURN(auto session, runtime::Session::create(std::move(copy), so));
  NFUSE_ASSIGN_OR_RETURN(const compile::Plan* plan, session->prepare({{in->name, dims}}));
  const ir::Graph& g = session->planned_graph(*plan);
  const backends::PlanView view = plan->view(g);
  static const std::set<std::string> kInt8 = {"QLinearConv", "QLinearConvRegion", "QLinearMatMul", "ConvInteger",
                                              "MatMulInteger"};
  static const std::set<std::string> kInt16 = {"QLinearConv16", "QLinearMatMul16"};
  MacShares m;
  for (const auto& n : g.nodes()) {
    if (!partition::is_mac_op(*n)) continue;
    const int64_t macs = partition::node_macs(*n, view);
    const bool int8 = kInt8.count(n->op_type) != 0, int16 = kInt16.count(n->op_type) != 0;
    (int8 ? m.int8 : int16 ? m.int16 : m.float32) += macs;
    if (!n->name.empty()) m.ran[n->name] = int8 ? "int8" : int16 ? "int16" : "float";
  }
  return m;
}

namespace {

// One rung of one layer's promotion, and what it buys per unit of compute.
struct Step {
  size_t layer;  // index into the sensitivity
  PromoteTo to;  // kInt16 or kFloat
  double gain_per_cost;
};

// The compute a layer's promotion converts: its MACs, or for a layer without MACs the elements
// of its inputs and output.
double work_units(const LayerWork& work, const std::string& node_output) {
  const auto m = work.macs.find(node_output);
  const auto e = work.elements.find(node_output);
  int64_t basis = m != work.macs.end() ? m->second : 0;
  if (basis <= 0 && e != work.elements.end()) basis = e->second;
  return static_cast<double>(std::max<int64_t>(basis, 1));
}

// For each layer (node_output): the layers writing its quantized inputs. An input that takes its
// parameters from another tensor (a MaxPool's output, value-moving) brings the layers back to
// that tensor's writer: each of them must write 16 bits for the input to arrive at 16 bits.
// Graph inputs have no writer.
std::map<std::string, std::vector<std::string>> input_writers(const QuantPlan& plan) {
  std::map<std::string, const PlannedLayer*> writer;  // tensor -> layer
  for (const auto& l : plan.layers) {
    if (l.output_quantized) writer[l.output] = &l;
  }
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& l : plan.layers) {
    std::vector<std::string>& ws = out[l.node_output];
    std::vector<std::string> pending(l.inputs.begin(), l.inputs.end());
    std::set<std::string> seen;
    while (!pending.empty()) {
      const std::string t = pending.back();
      pending.pop_back();
      if (!seen.insert(t).second) continue;
      const auto w = writer.find(t);
      if (w == writer.end() || w->second == &l) continue;
      if (std::find(ws.begin(), ws.end(), w->second->node_output) == ws.end()) ws.push_back(w->second->node_output);
      if (plan.shared.count(t)) pending.insert(pending.end(), w->second->inputs.begin(), w->second->inputs.end());
    }
    if (ws.empty()) out.erase(l.node_output);
  }
  return out;
}

// The compute an int16 step of `name` converts: the layer's and the writers' it widens.
double int16_step_units(const LayerWork& work, const std::map<std::string, std::vector<std::string>>& writers,
                        const std::string& name) {
  double units = work_units(work, name);
  if (const auto w = writers.find(name); w != writers.end()) {
    for (const auto& writer : w->second) units += work_units(work, writer);
  }
  return units;
}

std::vector<Step> promotion_steps(const std::vector<LayerSensitivity>& sensitivity, const LayerWork& work,
                                  const std::map<std::string, std::vector<std::string>>& writers, PromoteTo to) {
  std::vector<Step> steps;
  for (size_t i = 0; i < sensitivity.size(); ++i) {
    const LayerSensitivity& s = sensitivity[i];
    const double loss8 = 1.0 - s.worst;
    if (!(loss8 > 0.0)) continue;  // quantizing it alone costs nothing: promoting it cannot help
    const double units = work_units(work, s.node_output);
    const double units16 = int16_step_units(work, writers, s.node_output);  // widens the input's writers too
    const double loss16 = s.int16 ? std::max(0.0, 1.0 - s.int16_worst) : loss8;
    const bool int16_helps = to != PromoteTo::kFloat && s.int16 && loss16 <= kInt16MustRecover * loss8;
    if (int16_helps) {
      steps.push_back({i, PromoteTo::kInt16, (loss8 - loss16) / (units16 * (kCostPerMacInt16 - kCostPerMacInt8))});
      if (to == PromoteTo::kAuto && loss16 > 0.0)
        steps.push_back({i, PromoteTo::kFloat, loss16 / (units * (kCostPerMacFloat - kCostPerMacInt16))});
    } else if (to != PromoteTo::kInt16) {
      steps.push_back({i, PromoteTo::kFloat, loss8 / (units * (kCostPerMacFloat - kCostPerMacInt8))});
    }
  }
  // Most gain per cost first; ties keep graph order. A layer's float rung never sorts before its
  // int16 rung in effect: a prefix takes each layer's highest rung.
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Step& a, const Step& b) { return a.gain_per_cost > b.gain_per_cost; });
  return steps;
}

}  // namespace

Result<MixedPrecisionResult> promote_until(QuantizeResult& q, const std::vector<LayerSensitivity>& sensitivity,
                                           const LayerWork& work, const std::vector<ir::Tensor>& batches,
                                           const std::vector<ir::Tensor>& reference, double target_cosine, PromoteTo to,
                                           int threads) {
  MixedPrecisionResult r;
  r.target_cosine = target_cosine;
  NFUSE_ASSIGN_OR_RETURN(r.before, evaluate_output(*q.qdq, batches, reference, threads, &r.worst_before));
  ++r.evaluations;
  r.after = r.before;
  r.worst_after = r.worst_before;
  const std::map<std::string, std::vector<std::string>> writers = input_writers(q.plan);
  const std::vector<Step> steps = promotion_steps(sensitivity, work, writers, to);
  const QdqSelection base = q.selection;
  // The selection taking the steps of the prefix marked in `kept` (the demotions below drop some):
  // each layer at its highest rung among them, an int16 step with its inputs' writers.
  auto select_kept = [&](const std::vector<bool>& kept) {
    QdqSelection s = base;
    for (size_t i = 0; i < kept.size(); ++i) {
      if (!kept[i]) continue;
      const std::string& name = sensitivity[steps[i].layer].node_output;
      if (steps[i].to == PromoteTo::kFloat) {
        s.float_layers.insert(name);
      } else {
        s.int16_layers.insert(name);
        if (const auto w = writers.find(name); w != writers.end())
          s.int16_layers.insert(w->second.begin(), w->second.end());
      }
    }
    return s;
  };
  auto select = [&](size_t k) { return select_kept(std::vector<bool>(k, true)); };
  struct Eval {
    ErrorSummary all;
    double worst = 1.0;
  };
  auto evaluate_selection = [&](const QdqSelection& selection) -> Result<Eval> {
    NFUSE_RETURN_IF_ERROR(q.rebuild(selection), "mixed precision");
    Eval e;
    NFUSE_ASSIGN_OR_RETURN(e.all, evaluate_output(*q.qdq, batches, reference, threads, &e.worst));
    ++r.evaluations;
    return e;
  };
  auto evaluate = [&](size_t k) { return evaluate_selection(select(k)); };
  // Growing steps until the target is met, then a bisection inside the last step for the
  // shortest prefix that still meets it.
  size_t lo = 0, hi = 0;  // prefix lo misses the target; hi is the current candidate
  Eval at_hi{r.before, r.worst_before};
  std::vector<double> worst_at(steps.size() + 1, -1.0);
  worst_at[0] = r.worst_before;
  while (at_hi.worst < target_cosine && hi < steps.size()) {
    lo = hi;
    hi = std::min(steps.size(), hi + std::max<size_t>(1, hi / 2));
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
  // The prefix is ranked by each layer's score alone, but the errors do not add: once the target
  // is met, the costliest promotions are each tried one rung down (float to int16 where the layer
  // has an int16 step, else to int8; int16 to int8, its writers with it) and kept down where every
  // sample still meets the target.
  std::vector<bool> kept(hi, true);
  if (at_hi.worst >= target_cosine) {
    std::map<std::string, size_t> top;  // layer -> its highest step in the prefix
    for (size_t i = 0; i < hi; ++i) {
      const std::string& name = sensitivity[steps[i].layer].node_output;
      const auto it = top.find(name);
      if (it == top.end() || steps[i].to == PromoteTo::kFloat) top[name] = i;
    }
    std::vector<std::pair<double, size_t>> costly;  // (compute the rung adds, step)
    for (const auto& [name, i] : top) {
      costly.push_back({steps[i].to == PromoteTo::kFloat
                            ? work_units(work, name) * (kCostPerMacFloat - kCostPerMacInt16)
                            : int16_step_units(work, writers, name) * (kCostPerMacInt16 - kCostPerMacInt8),
                        i});
    }
    std::stable_sort(costly.begin(), costly.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (costly.size() > kMaxDemotionTrials) costly.resize(kMaxDemotionTrials);
    for (const auto& [cost, i] : costly) {
      std::vector<bool> trial = kept;
      trial[i] = false;
      auto e = evaluate_selection(select_kept(trial));
      if (!e.ok()) return e.status().with_context("demoting " + sensitivity[steps[i].layer].node_output);
      if (e->worst >= target_cosine) {
        kept = std::move(trial);
        at_hi = *e;
        ++r.demotions;
      }
    }
  }
  NFUSE_RETURN_IF_ERROR(q.rebuild(select_kept(kept)), "mixed precision");
  r.after = at_hi.all;
  r.worst_after = at_hi.worst;
  std::map<std::string, const PlannedLayer*> layers;
  for (const auto& l : q.plan.layers) layers[l.node_output] = &l;
  std::map<std::string, size_t> sensitivity_of;
  for (size_t i = 0; i < sensitivity.size(); ++i) sensitivity_of[sensitivity[i].node_output] = i;
  std::map<std::string, size_t> promotion_of;  // node_output -> index into r.promotions
  double last = r.worst_before;
  // Lists `name` as promoted to `to` after this step (a writer widened for a reader: `reader`).
  auto record = [&](const std::string& name, PromoteTo to, const std::string& reader) {
    const PlannedLayer& l = *layers.at(name);
    auto [it, added] = promotion_of.emplace(name, r.promotions.size());
    if (added) {
      const auto si = sensitivity_of.find(name);
      const LayerSensitivity* s = si == sensitivity_of.end() ? nullptr : &sensitivity[si->second];
      const auto m = work.macs.find(name);
      r.promotions.push_back({l.node_output, l.name, l.op, to, s ? s->output.cosine : 1.0,
                              s && s->int16 ? s->int16->cosine : -1.0, m == work.macs.end() ? 0 : m->second, last,
                              reader});
    }
    Promotion& p = r.promotions[it->second];
    if (to == PromoteTo::kFloat) p.to = PromoteTo::kFloat;
    if (reader.empty()) p.writes_input_of.clear();  // promoted for itself as well
    p.output_cosine_after = last;
  };
  for (size_t i = 0; i < hi; ++i) {
    const std::string& name = sensitivity[steps[i].layer].node_output;
    if (worst_at[i + 1] >= 0.0) last = worst_at[i + 1];
    if (!kept[i]) continue;
    record(name, steps[i].to, "");
    if (steps[i].to != PromoteTo::kInt16) continue;
    if (const auto w = writers.find(name); w != writers.end()) {
      for (const auto& writer : w->second) {
        if (!promotion_of.count(writer)) record(writer, PromoteTo::kInt16, layers.at(name)->name);
      }
    }
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
