// The partitioner: which backend runs each node of a plan, and why.
//
// Input: the plan's runtime nodes in graph order, its concrete types, the backends (through a
// BackendPool, whose instances the plan then compiles with), the user's PartitionOptions and a
// device profile. Like ggml's scheduler (ggml_backend_sched_split_graph) it is a documented
// sequence of passes over one assignment vector (partitioner.cpp):
//
//   0. cluster_chains          for a backend that keeps intermediates on chip (fusion), a node
//                               whose only consumer is the next link of a chain that backend
//                               runs is moved to just before that consumer, so chains that graph
//                               order interleaves with other branches become contiguous runs.
//                               The report lists nodes in this order.
//   1. assign_pins_and_denials  a pin (node name first, then op type) places a node whatever the
//                               cost; a denied op type goes to the fallback.
//   2. assign_preferred         every other node goes to the first backend of `prefer` whose
//                               supports_planned() accepts it (the fallback, then ref, else fail);
//                               the first backend's refusal is kept as the node's reason.
//   3. remove_ping_pong         a short run of backend B between two runs of backend A that A
//                               can run moves to A when that lowers the estimated total (it
//                               saves two boundaries).
//   4. refuse_unprofitable      a node of a partition on a preferred backend that computes
//                               slower there (a 3x3 conv the cpu runs as Winograd) moves to the
//                               fallback when that lowers the total, one at a time; then a
//                               partition whose estimate (its internal tensors on chip where the
//                               backend keeps them there) plus its boundaries is not below the
//                               same nodes on the fallback moves to the fallback (reason "cost").
//                               Then 3 once more. Passes 3 and 4 run for backend "auto" only: a
//                               named backend is not second-guessed.
//   5. split                    consecutive runs of one backend become partitions, with their
//                               boundary tensors, the transfers between backends, estimates,
//                               fallback ratios and warnings.
//
// Deterministic: every pass walks vectors in graph order; nothing depends on hash order.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/device_profile.h"
#include "ir/graph.h"
#include "nfuse/status.h"
#include "partition/partition_options.h"

namespace nfuse::partition {

// One instance per backend name, created on first use and shared by the partitioner (which asks
// supports_planned) and the plan (which compiles every partition of that backend with it).
class BackendPool {
 public:
  // The named backend; kNotFound (listing the registered names) for an unknown one.
  Result<backends::Backend*> get(const std::string& name);

 private:
  std::map<std::string, std::unique_ptr<backends::Backend>> instances_;
};

// Why a node is not on the first preferred backend.
// The backend's typed answer (unsupported op, dtype, dynamic shape, rank) or the partitioner's
// own (cost, pinned, denied).
using Reason = backends::SupportReason;
inline const char* reason_name(Reason r) { return backends::support_reason_name(r); }

struct NodePlacement {
  const ir::Node* node = nullptr;
  std::string backend;
  Reason reason = Reason::kNone;
  std::string detail;  // the backend's own words ("fusion: LSTM is not a regular op"), or empty
  double est_us = 0.0;
  // "unsupported op (fusion: ...)"; empty when on the first preferred backend.
  std::string reason_text() const;
};

struct PartitionInfo {
  int index = 0;
  std::string backend;
  std::vector<const ir::Node*> nodes;
  std::vector<const ir::Value*> inputs;   // non-constant values read here, produced elsewhere
  std::vector<const ir::Value*> outputs;  // values produced here, read by a later partition or the caller
  double est_us = 0.0;                    // its nodes' estimates (transfers not included)
};

// A tensor handed from a partition of one backend to a partition of another.
struct Transfer {
  const ir::Value* value = nullptr;
  int from_partition = 0, to_partition = 0;
  std::string from, to;
  int64_t bytes = 0;
  double est_us = 0.0;
};

struct PartitionResult {
  std::vector<std::string> prefer;  // as resolved ("auto" defaults applied)
  std::string fallback;
  std::vector<NodePlacement> nodes;  // the runtime nodes, in graph order
  std::vector<PartitionInfo> partitions;
  std::vector<Transfer> transfers;
  double est_total_us = 0.0;          // nodes + transfers
  double fallback_ratio_nodes = 0.0;  // share of nodes not on prefer[0]
  double fallback_ratio_time = 0.0;   // share of the nodes' estimated time not on prefer[0]
  std::vector<std::string> warnings;
  backends::DeviceProfile profile;
  int threads = 1;
  // Read from a context binary (decided when it was compiled) rather than computed by this
  // process's partitioner.
  bool from_binary = false;
};

struct PartitionRequest {
  const ir::Graph* graph = nullptr;
  std::vector<const ir::Node*> nodes;  // runtime nodes, graph order
  backends::PlanView type_of;
  std::function<bool(const ir::Value*)> is_constant;  // known at plan time
  std::string backend = "auto";  // "auto" or one backend's name (then prefer = {it})
  PartitionOptions options;
  backends::DeviceProfile profile;
  int threads = 1;
};

// The default `prefer` of backend "auto": the registered backends by BackendTraits::auto_priority
// ({"fusion", "cpu"}).
std::vector<std::string> default_prefer();

// Places every node. Fails with kNotFound for an unknown backend name, kUnsupported for a pin
// onto a backend that cannot run the node or a node nothing can run, and, with
// require_full_offload, kUnsupported listing every node (name, op, reason) off prefer[0].
Result<PartitionResult> partition_nodes(const PartitionRequest& request, BackendPool& pool);

}  // namespace nfuse::partition
