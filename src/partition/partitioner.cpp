#include "partition/partitioner.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <limits>
#include <set>

#include "partition/partition_layout.h"

namespace nfuse::partition {
namespace {

// A run of at most this many nodes between two runs of another backend is a ping-pong candidate:
// longer runs are real partitions, judged by refuse_unprofitable.
constexpr int kMaxPingPongNodes = 4;
// Totals closer than this (us) count as equal: float noise must not decide a placement.
constexpr double kEpsilonUs = 1e-9;
// Above this share of nodes or time off the first preferred backend, the report warns.
constexpr double kFallbackWarnRatio = 0.10;

// The backends in order of preference: `prefer` (default fusion, cpu) under "auto", else the
// one backend named.
std::vector<std::string> preferred_backends(const PartitionRequest& req) {
  if (req.backend != "auto") return {req.backend};
  return req.options.prefer.empty() ? default_prefer() : req.options.prefer;
}

// The state the passes share: the assignment and what each node may do.
class Partitioner {
 public:
  Partitioner(const PartitionRequest& req, BackendPool& pool, const CostModel& cost)
      : req_(req), pool_(pool), cost_(cost), index_(req.nodes) {
    const size_t n = req.nodes.size();
    assign_.assign(n, "");
    pinned_.assign(n, false);
    refused_.assign(n, "");
    denied_.assign(n, false);
    support_.resize(n);
  }

  Status resolve_backends(PartitionResult& result);
  Status assign_pins_and_denials(PartitionResult& result);
  Status assign_preferred();
  void remove_ping_pong();
  void refuse_unprofitable();
  void apply_backend_refusals();
  Status finish(PartitionResult& result);

 private:
  // supports() of `backend` for node i, asked once.
  const backends::Support& support(int i, const std::string& backend) {
    auto& cache = support_[static_cast<size_t>(i)];
    auto it = cache.find(backend);
    if (it != cache.end()) return it->second;
    auto b = pool_.get(backend);  // names were checked by resolve_backends
    backends::Support s = b.ok() ? (*b)->supports(*req_.nodes[static_cast<size_t>(i)], req_.type_of)
                                 : backends::Support::no(Reason::kUnsupportedOp, b.status().message());
    return cache.emplace(backend, std::move(s)).first->second;
  }
  bool can_run(int i, const std::string& backend) { return support(i, backend).ok(); }
  // Where a node goes when its preferred backends do not take it: the fallback, else ref.
  std::string fallback_for(int i) { return can_run(i, fallback_) ? fallback_ : reference_; }
  // Whether node i may be moved to `backend` by a cost pass. With require_full_offload nothing
  // leaves the first preferred backend for cost: the user asked for it whatever it costs.
  bool movable(int i, const std::string& backend) {
    if (pinned_[static_cast<size_t>(i)] || !can_run(i, backend)) return false;
    if (!refused_[static_cast<size_t>(i)].empty() && backend != fallback_for(i)) return false;
    if (req_.options.require_full_offload && assign_[static_cast<size_t>(i)] == prefer_[0] && backend != prefer_[0]) {
      return false;
    }
    return !denied_[static_cast<size_t>(i)] || backend == fallback_for(i);
  }
  double total(const Assignment& a) const { return total_us(index_, a, cost_); }

  const PartitionRequest& req_;
  BackendPool& pool_;
  const CostModel& cost_;
  NodeIndex index_;
  std::vector<std::string> prefer_;
  std::string fallback_;
  std::string reference_;  // the registry's reference backend: the last resort
  Assignment assign_;
  std::vector<bool> pinned_, denied_;
  std::vector<std::string> refused_;  // the backend's words when it gave the node up (pass 4b)
  std::vector<std::map<std::string, backends::Support>> support_;
};

Status Partitioner::resolve_backends(PartitionResult& result) {
  if (req_.backend != "auto" && !req_.options.prefer.empty() &&
      req_.options.prefer != std::vector<std::string>{req_.backend}) {
    return invalid_argument("--prefer applies to --backend auto (the backend is '" + req_.backend + "')");
  }
  prefer_ = preferred_backends(req_);
  // The fallback is the last preferred backend; one named backend that takes only some ops falls
  // back to the general fallback (cpu), the reference and the general fallback to themselves.
  const backends::BackendRegistry& registry = backends::BackendRegistry::global();
  reference_ = registry.reference();
  if (reference_.empty()) return internal_error("no reference backend is registered");
  auto first = registry.traits(prefer_[0]);
  if (!first.ok()) return first.status();
  const bool self_sufficient = first->is_reference || first->is_general_fallback;
  fallback_ = prefer_.size() > 1 || self_sufficient ? prefer_.back() : registry.general_fallback();
  if (fallback_.empty()) return internal_error("no general fallback backend is registered");
  std::vector<std::string> names = prefer_;
  names.push_back(fallback_);
  names.push_back(reference_);
  for (const auto& [key, backend] : req_.options.pins) names.push_back(backend);
  for (const std::string& name : names) {
    auto b = pool_.get(name);
    if (!b.ok()) return b.status();
  }
  result.prefer = prefer_;
  result.fallback = fallback_;
  return ok_status();
}

// Pass 1. A node's own name wins over its op type, so `--pin Conv=fusion --pin conv7=cpu` works.
Status Partitioner::assign_pins_and_denials(PartitionResult& result) {
  const PartitionOptions& o = req_.options;
  for (const auto& [key, backend] : o.pins) {  // std::map: warnings come out sorted
    bool matches = false;
    for (const auto& n : req_.graph->nodes()) matches = matches || n->name == key || n->op_type == key;
    if (!matches) result.warnings.push_back("pin '" + key + "' matches no node name or op type of the (optimized) graph");
  }
  for (int i = 0; i < index_.size(); ++i) {
    const ir::Node& n = *req_.nodes[static_cast<size_t>(i)];
    auto pin = o.pins.find(n.name);
    if (n.name.empty() || pin == o.pins.end()) pin = o.pins.find(n.op_type);
    if (pin != o.pins.end()) {
      const backends::Support& s = support(i, pin->second);
      if (!s.ok())
        return unsupported(n.label() + " is pinned to '" + pin->second + "', which cannot run it: " + s.text());
      assign_[static_cast<size_t>(i)] = pin->second;
      pinned_[static_cast<size_t>(i)] = true;
      continue;
    }
    if (std::find(o.deny.begin(), o.deny.end(), n.op_type) != o.deny.end()) {
      denied_[static_cast<size_t>(i)] = true;
      assign_[static_cast<size_t>(i)] = fallback_for(i);
    }
  }
  return ok_status();
}

// Pass 2.
Status Partitioner::assign_preferred() {
  for (int i = 0; i < index_.size(); ++i) {
    if (!assign_[static_cast<size_t>(i)].empty()) continue;
    for (const std::string& b : prefer_) {
      if (!can_run(i, b)) continue;
      assign_[static_cast<size_t>(i)] = b;
      break;
    }
    if (!assign_[static_cast<size_t>(i)].empty()) continue;
    for (const std::string& b : {fallback_, reference_}) {
      if (!can_run(i, b)) continue;
      assign_[static_cast<size_t>(i)] = b;
      break;
    }
    if (assign_[static_cast<size_t>(i)].empty()) {
      return unsupported(req_.nodes[static_cast<size_t>(i)]->label() + ": no backend can run it (" + prefer_[0] + ": " +
                         support(i, prefer_[0]).text() + "; " + reference_ + ": " + support(i, reference_).text() +
                         ")");
    }
  }
  return ok_status();
}

// Pass 3. Each move lowers the total, so the loop ends; the guard is only a backstop.
void Partitioner::remove_ping_pong() {
  for (int guard = 0; guard <= index_.size(); ++guard) {
    bool moved = false;
    const std::vector<Run> runs = runs_of(assign_);
    for (size_t r = 1; r + 1 < runs.size() && !moved; ++r) {
      const std::string& a = runs[r - 1].backend;
      if (runs[r + 1].backend != a || runs[r].end - runs[r].begin > kMaxPingPongNodes) continue;
      bool ok = true;
      for (int i = runs[r].begin; i < runs[r].end && ok; ++i) ok = movable(i, a);
      if (!ok) continue;
      Assignment candidate = assign_;
      for (int i = runs[r].begin; i < runs[r].end; ++i) candidate[static_cast<size_t>(i)] = a;
      if (total(candidate) < total(assign_) - kEpsilonUs) {
        assign_ = std::move(candidate);
        moved = true;
      }
    }
    if (!moved) return;
  }
}

// Pass 4. With require_full_offload the first backend's partitions are kept (see movable).
void Partitioner::refuse_unprofitable() {
  for (int guard = 0; guard <= index_.size(); ++guard) {
    bool moved = false;
    const std::vector<Run> runs = runs_of(assign_);
    for (const Run& run : runs) {
      if (run.backend == fallback_ || run.backend == reference_) continue;
      if (std::find(prefer_.begin(), prefer_.end(), run.backend) == prefer_.end()) continue;  // pinned there
      Assignment candidate = assign_;
      bool any = false, ok = true;
      for (int i = run.begin; i < run.end; ++i) {
        if (pinned_[static_cast<size_t>(i)]) continue;
        if (!movable(i, fallback_)) ok = false;
        candidate[static_cast<size_t>(i)] = fallback_;
        any = true;
      }
      if (!any || !ok) continue;
      // A node may cost more on this backend than it saves (a 3x3 conv the fallback runs as
      // Winograd, amid a fused chain): of the nodes whose own compute is slower here, move the
      // first whose leaving lowers the total, one at a time, before judging the rest as a whole.
      for (int i = run.begin; i < run.end; ++i) {
        if (pinned_[static_cast<size_t>(i)] || !movable(i, fallback_)) continue;
        const ir::Node& n = *req_.nodes[static_cast<size_t>(i)];
        if (cost_.estimate(n, run.backend, nullptr).compute_us <= cost_.estimate(n, fallback_, nullptr).compute_us)
          continue;
        Assignment peeled = assign_;
        peeled[static_cast<size_t>(i)] = fallback_;
        if (total(peeled) < total(assign_) - kEpsilonUs) {
          assign_ = std::move(peeled);
          moved = true;
          break;
        }
      }
      if (moved) break;
      // "Not below": a tie goes to the fallback, which needs no boundary and is always there.
      if (total(assign_) >= total(candidate) - kEpsilonUs) {
        assign_ = std::move(candidate);
        moved = true;
        break;
      }
    }
    if (!moved) return;
  }
}

// Pass 4b. A backend may give up nodes it supports but would run no faster than the fallback
// (the fusion backend: groups with nothing to keep in cache); ask each preferred partition until
// nothing changes, since giving up nodes can split the groups of the rest.
void Partitioner::apply_backend_refusals() {
  for (int guard = 0; guard <= index_.size(); ++guard) {
    bool moved = false;
    for (const Run& run : runs_of(assign_)) {
      if (run.backend == fallback_ || run.backend == reference_) continue;
      if (std::find(prefer_.begin(), prefer_.end(), run.backend) == prefer_.end()) continue;
      auto b = pool_.get(run.backend);
      if (!b.ok()) continue;
      backends::Partition part;
      part.backend = run.backend;
      for (int i = run.begin; i < run.end; ++i) part.nodes.push_back(req_.nodes[static_cast<size_t>(i)]);
      for (const backends::Backend::Refusal& r : (*b)->refuse(part, req_.type_of)) {
        const int i = index_.position(r.node);
        if (i < 0 || !movable(i, fallback_for(i))) continue;
        refused_[static_cast<size_t>(i)] = r.reason;
        assign_[static_cast<size_t>(i)] = fallback_for(i);
        moved = true;
      }
    }
    if (!moved) return;
  }
}

// Pass 5 and the report's figures.
Status Partitioner::finish(PartitionResult& result) {
  result.nodes.clear();
  for (int i = 0; i < index_.size(); ++i) {
    NodePlacement p;
    p.node = req_.nodes[static_cast<size_t>(i)];
    p.backend = assign_[static_cast<size_t>(i)];
    if (p.backend != prefer_[0]) {
      const backends::Support& first = support(i, prefer_[0]);
      if (pinned_[static_cast<size_t>(i)]) {
        p.reason = Reason::kPinned;
      } else if (denied_[static_cast<size_t>(i)]) {
        p.reason = Reason::kDenied;
      } else if (!first.ok()) {
        p.reason = first.reason;
        p.detail = prefer_[0] + ": " + first.detail;
      } else if (!refused_[static_cast<size_t>(i)].empty()) {
        p.reason = Reason::kCost;
        p.detail = prefer_[0] + ": " + refused_[static_cast<size_t>(i)];
      } else {
        p.reason = Reason::kCost;
      }
    }
    result.nodes.push_back(std::move(p));
  }
  split(index_, assign_, cost_, result);
  double time = 0.0, fallback_time = 0.0;
  int fallback_nodes = 0;
  for (const NodePlacement& p : result.nodes) {
    time += p.est_us;
    if (p.backend == prefer_[0]) continue;
    ++fallback_nodes;
    fallback_time += p.est_us;
  }
  const size_t n = result.nodes.size();
  result.fallback_ratio_nodes = n ? static_cast<double>(fallback_nodes) / static_cast<double>(n) : 0.0;
  result.fallback_ratio_time = time > 0.0 ? fallback_time / time : 0.0;
  if (result.fallback_ratio_nodes > kFallbackWarnRatio || result.fallback_ratio_time > kFallbackWarnRatio) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%d of %zu nodes (%.1f%%) and %.1f%% of the estimated time fall back from '%s'",
                  fallback_nodes, n, 100.0 * result.fallback_ratio_nodes, 100.0 * result.fallback_ratio_time,
                  prefer_[0].c_str());
    result.warnings.emplace_back(buf);
  }
  if (req_.options.require_full_offload && fallback_nodes > 0) {
    std::string msg = "require_full_offload: " + std::to_string(fallback_nodes) + " of " + std::to_string(n) +
                      " nodes would not run on '" + prefer_[0] + "':";
    for (const NodePlacement& p : result.nodes) {
      if (p.backend == prefer_[0]) continue;
      msg += "\n  " + p.node->name + " (" + p.node->op_type + ") on " + p.backend + ": " + p.reason_text();
    }
    return unsupported(msg);
  }
  return ok_status();
}

}  // namespace

Result<backends::Backend*> BackendPool::get(const std::string& name) {
  auto it = instances_.find(name);
  if (it != instances_.end()) return it->second.get();
  NFUSE_ASSIGN_OR_RETURN(auto backend, backends::BackendRegistry::global().create(name));
  backends::Backend* raw = backend.get();
  instances_.emplace(name, std::move(backend));
  return raw;
}

std::string NodePlacement::reason_text() const {
  std::string s = reason_name(reason);
  if (!detail.empty()) s += " (" + detail + ")";
  return s;
}

std::vector<std::string> default_prefer() { return backends::BackendRegistry::global().auto_order(); }

// Pass 0. Graph order interleaves independent branches (an FPN's upsampling chain between the
// members of a lateral chain), which would cut a fusing backend's chains into runs too short to
// pay. A node whose only consumer is the next link of a chain the first preferred backend can
// run together (both supported, the value used nowhere else) is emitted just before that
// consumer instead: a valid topological order, since the value has no other reader and the
// node's inputs are ready earlier still. Only for backends that keep intermediates on chip.
std::vector<const ir::Node*> cluster_chains(const PartitionRequest& req, BackendPool& pool) {
  const std::string first = preferred_backends(req).front();
  auto backend = pool.get(first);
  if (!backend.ok() || !(*backend)->traits().keeps_intermediates_on_chip) return req.nodes;
  std::set<const ir::Node*> in_plan(req.nodes.begin(), req.nodes.end());
  auto supported = [&](const ir::Node* n) { return (*backend)->supports(*n, req.type_of).ok(); };
  std::set<const ir::Node*> deferred;
  for (const ir::Node* n : req.nodes) {
    if (n->outputs.size() != 1 || !n->output(0)) continue;
    const ir::Value* v = n->output(0);
    if (v->is_graph_output || v->consumers.size() != 1) continue;
    const ir::Node* c = v->consumers.front();
    if (in_plan.count(c) && supported(n) && supported(c)) deferred.insert(n);
  }
  std::vector<const ir::Node*> order;
  std::set<const ir::Node*> emitted;
  auto deferred_producers = [&](const ir::Node* n) {
    std::vector<const ir::Node*> out;
    for (const auto* list : {&n->inputs, &n->implicit_inputs}) {  // a fused residual is read too
      for (const ir::Value* v : *list) {
        const ir::Node* p = v ? v->producer : nullptr;
        if (p && deferred.count(p) && std::find(out.begin(), out.end(), p) == out.end()) out.push_back(p);
      }
    }
    return out;
  };
  auto elements = [&](const ir::Node* p) {
    auto n = req.type_of(p->output(0)).shape.static_numel();
    return n ? *n : std::numeric_limits<int64_t>::max();
  };
  // Everything a node's deferred producers need comes first, then those producers together,
  // right before the node: a Concat's upsampled side inputs land beside the chain that Concat
  // continues, not before the nodes that chain pulls in. Smaller outputs first, so the producer
  // of the full-size input the node continues comes last, right before it: a per-channel
  // operand's producer (an attention scale's "+ 1") would otherwise sit between the chain's
  // links, and if its backend gives it back as too small to pay, it cuts the chain.
  std::function<void(const ir::Node*)> emit_upstream = [&](const ir::Node* n) {
    std::vector<const ir::Node*> producers = deferred_producers(n);
    std::erase_if(producers, [&](const ir::Node* p) { return emitted.count(p) > 0; });
    std::stable_sort(producers.begin(), producers.end(),
                     [&](const ir::Node* a, const ir::Node* b) { return elements(a) < elements(b); });
    for (const ir::Node* p : producers) emit_upstream(p);
    for (const ir::Node* p : producers) {
      if (emitted.insert(p).second) order.push_back(p);
    }
  };
  auto emit = [&](const ir::Node* n) {
    emit_upstream(n);
    emitted.insert(n);
    order.push_back(n);
  };
  for (const ir::Node* n : req.nodes)
    if (!deferred.count(n)) emit(n);
  // Every deferred node is read by a node emitted after it; if not, graph order stays.
  return order.size() == req.nodes.size() ? order : req.nodes;
}

Result<PartitionResult> partition_nodes(const PartitionRequest& request_in, BackendPool& pool) {
  if (!request_in.graph || !request_in.type_of.graph() || !request_in.is_constant) {
    return internal_error("partition_nodes: incomplete request");
  }
  PartitionRequest request = request_in;
  request.nodes = cluster_chains(request_in, pool);
  PartitionResult result;
  result.profile = request.profile;
  result.threads = request.threads;
  const CostModel cost(request.profile, request.type_of, request.is_constant, request.threads);
  Partitioner p(request, pool, cost);
  NFUSE_RETURN_IF_ERROR_PLAIN(p.resolve_backends(result));
  NFUSE_RETURN_IF_ERROR_PLAIN(p.assign_pins_and_denials(result));
  NFUSE_RETURN_IF_ERROR_PLAIN(p.assign_preferred());
  // A named backend is the user's choice: the cost passes only refine "auto".
  if (request.backend == "auto") {
    p.remove_ping_pong();
    p.refuse_unprofitable();
    p.apply_backend_refusals();
    p.remove_ping_pong();
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(p.finish(result));
  return result;
}

}  // namespace nfuse::partition
