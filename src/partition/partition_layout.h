// Internal to the partitioner: an assignment (one backend name per runtime node) seen as runs of
// consecutive nodes, what it costs in total, and the split into PartitionInfo/Transfer records.
// Shared by the passes (partitioner.cpp), which compare the totals of candidate assignments.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "partition/cost_model.h"
#include "partition/partitioner.h"

namespace nfuse::partition {

using Assignment = std::vector<std::string>;  // backend per runtime node, graph order

struct Run {
  int begin = 0, end = 0;  // [begin, end) of the runtime nodes
  std::string backend;
};

// The runtime nodes and where each one sits; lookups only (never iterated), so hash order
// cannot leak into results.
class NodeIndex {
 public:
  explicit NodeIndex(const std::vector<const ir::Node*>& nodes);
  // Position of a runtime node, -1 for a node that does not run (folded at plan time).
  int position(const ir::Node* n) const;
  const std::vector<const ir::Node*>& nodes() const { return nodes_; }
  int size() const { return static_cast<int>(nodes_.size()); }

 private:
  std::vector<const ir::Node*> nodes_;
  std::unordered_map<const ir::Node*, int> pos_;
};

// Maximal runs of equal backends, in order.
std::vector<Run> runs_of(const Assignment& assign);

// Every value a node reads: its inputs, then its subgraphs' outer-scope values.
std::vector<const ir::Value*> values_read(const ir::Node& node);

// The estimated time of the whole assignment: every node on its backend (tensors internal to a
// run of an on-chip backend at L2) plus one boundary per tensor per consuming run of another
// backend. What the passes minimise.
double total_us(const NodeIndex& index, const Assignment& assign, const CostModel& cost);

// Pass 5: partitions, their boundary tensors, transfers and per-node estimates (fills
// result.partitions, result.transfers, result.nodes[i].est_us, result.est_total_us).
void split(const NodeIndex& index, const Assignment& assign, const CostModel& cost, PartitionResult& result);

}  // namespace nfuse::partition
