#include "partition/partition_layout.h"

#include <set>
#include <utility>

namespace nfuse::partition {
namespace {

std::vector<int> run_ids(const Assignment& assign) {
  std::vector<int> ids(assign.size(), 0);
  for (size_t i = 1; i < assign.size(); ++i) ids[i] = ids[i - 1] + (assign[i] != assign[i - 1] ? 1 : 0);
  return ids;
}

// Which tensors stay on chip: produced and consumed only inside one run of a backend that keeps
// intermediates on chip, and not handed to the caller.
class OnChipRule {
 public:
  OnChipRule(const NodeIndex& index, const Assignment& assign, const CostModel& cost)
      : index_(index), assign_(assign), cost_(cost), run_(run_ids(assign)) {}

  int run(int i) const { return run_[static_cast<size_t>(i)]; }

  bool on_chip(const ir::Value* v, int node) const {
    const std::string& backend = assign_[static_cast<size_t>(node)];
    if (!v || v->is_graph_output || !v->producer) return false;
    if (!cost_.backend_traits(backend).keeps_intermediates_on_chip) return false;
    const int p = index_.position(v->producer);
    if (p < 0 || run(p) != run(node)) return false;
    for (const ir::Node* c : v->consumers) {
      const int q = index_.position(c);
      if (q >= 0 && run(q) != run(node)) return false;
    }
    return true;
  }

  OnChip for_node(int node) const {
    return [this, node](const ir::Value* v) { return on_chip(v, node); };
  }

 private:
  const NodeIndex& index_;
  const Assignment& assign_;
  const CostModel& cost_;
  std::vector<int> run_;
};

template <typename T>
void push_unique(std::vector<T>& list, T item) {
  for (const T& x : list)
    if (x == item) return;
  list.push_back(item);
}

}  // namespace

NodeIndex::NodeIndex(const std::vector<const ir::Node*>& nodes) : nodes_(nodes) {
  for (size_t i = 0; i < nodes_.size(); ++i) pos_.emplace(nodes_[i], static_cast<int>(i));
}

int NodeIndex::position(const ir::Node* n) const {
  auto it = pos_.find(n);
  return it == pos_.end() ? -1 : it->second;
}

std::vector<Run> runs_of(const Assignment& assign) {
  std::vector<Run> runs;
  for (size_t i = 0; i < assign.size(); ++i) {
    if (runs.empty() || runs.back().backend != assign[i]) {
      runs.push_back({static_cast<int>(i), static_cast<int>(i), assign[i]});
    }
    runs.back().end = static_cast<int>(i) + 1;
  }
  return runs;
}

std::vector<const ir::Value*> values_read(const ir::Node& node) {
  std::vector<const ir::Value*> out;
  for (const ir::Value* v : node.inputs)
    if (v) out.push_back(v);
  for (const ir::Value* v : node.implicit_inputs) out.push_back(v);
  return out;
}

double total_us(const NodeIndex& index, const Assignment& assign, const CostModel& cost) {
  const OnChipRule rule(index, assign, cost);
  double total = 0.0;
  // A tensor crossing into a run is handed over once, however many of the run's nodes read it.
  std::set<std::pair<const ir::Value*, int>> handed;  // membership only: never iterated
  for (int i = 0; i < index.size(); ++i) {
    const ir::Node& n = *index.nodes()[static_cast<size_t>(i)];
    const std::string& backend = assign[static_cast<size_t>(i)];
    total += cost.node_us(n, backend, rule.for_node(i));
    for (const ir::Value* v : values_read(n)) {
      if (cost.is_constant(v) || !v->producer) continue;
      const int p = index.position(v->producer);
      if (p < 0 || assign[static_cast<size_t>(p)] == backend) continue;
      if (handed.emplace(v, rule.run(i)).second) {
        total += cost.boundary_us(assign[static_cast<size_t>(p)], backend, cost.bytes_of(v));
      }
    }
  }
  return total;
}

void split(const NodeIndex& index, const Assignment& assign, const CostModel& cost, PartitionResult& result) {
  const OnChipRule rule(index, assign, cost);
  result.partitions.clear();
  result.transfers.clear();
  result.est_total_us = 0.0;
  for (const Run& run : runs_of(assign)) {
    PartitionInfo part;
    part.index = static_cast<int>(result.partitions.size());
    part.backend = run.backend;
    for (int i = run.begin; i < run.end; ++i) {
      const ir::Node& n = *index.nodes()[static_cast<size_t>(i)];
      part.nodes.push_back(&n);
      result.nodes[static_cast<size_t>(i)].est_us = cost.node_us(n, run.backend, rule.for_node(i));
      part.est_us += result.nodes[static_cast<size_t>(i)].est_us;
      for (const ir::Value* v : values_read(n)) {
        if (cost.is_constant(v)) continue;
        const int p = v->producer ? index.position(v->producer) : -1;
        if (p < run.begin) push_unique(part.inputs, v);  // graph inputs have p == -1
      }
      for (const ir::Value* v : n.outputs) {
        if (!v || cost.is_constant(v)) continue;
        bool leaves = v->is_graph_output;
        for (const ir::Node* c : v->consumers) {
          const int q = index.position(c);
          if (q >= 0 && (q < run.begin || q >= run.end)) leaves = true;
        }
        if (leaves) push_unique(part.outputs, v);
      }
    }
    result.est_total_us += part.est_us;
    result.partitions.push_back(std::move(part));
  }
  for (const PartitionInfo& part : result.partitions) {
    for (const ir::Value* v : part.inputs) {
      const int p = v->producer ? index.position(v->producer) : -1;
      if (p < 0) continue;
      const int from = rule.run(p);
      const std::string& from_backend = result.partitions[static_cast<size_t>(from)].backend;
      if (from_backend == part.backend) continue;
      Transfer t;
      t.value = v;
      t.from_partition = from;
      t.to_partition = part.index;
      t.from = from_backend;
      t.to = part.backend;
      t.bytes = cost.bytes_of(v);
      t.est_us = cost.boundary_us(t.from, t.to, t.bytes);
      result.est_total_us += t.est_us;
      result.transfers.push_back(std::move(t));
    }
  }
}

}  // namespace nfuse::partition
