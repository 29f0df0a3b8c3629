// The `fusion` backend: regular 4-D f32 ops (Conv incl. depthwise and grouped, pools, element-wise
// activations, Add/Mul) with static shapes, cut into chains and executed depth-first in strips
// of rows (fused_group.h), so a MobileNet block's 6x-expanded tensor lives only in a per-thread
// line buffer. Kernels are the cpu backend's microkernels; what changes is the order in which
// rows are computed and where intermediates live. Every run's arena traffic is known exactly
// (traffic()).
#include <algorithm>

#include "backends/backend.h"
#include "backends/fusion/fused_group.h"
#include "backends/fusion/group_former.h"

namespace nfuse::backends::fusion {
namespace {

class FusionPartition final : public CompiledPartition {
 public:
  FusionPartition(std::vector<std::unique_ptr<FusedGroup>> groups, int threads)
      : groups_(std::move(groups)), pool_(threads) {
    traffic_.known = true;
    for (const auto& g : groups_) {
      traffic_.groups.push_back(g->traffic());
      traffic_.fused_bytes += g->traffic().fused_bytes;
      traffic_.layerwise_bytes += g->traffic().layerwise_bytes;
    }
  }

  Status reserve() {
    size_t floats = 0;
    for (const auto& g : groups_) floats = std::max(floats, g->scratch_floats());
    if (!scratch_.reserve(pool_.threads(), floats)) return out_of_memory("fusion backend line buffers");
    return ok_status();
  }

  Status run(ExecContext& ctx) override {
    for (auto& g : groups_) {
      // A group's members run interleaved, so the profile books the group's time on its last
      // member and zero on the others (members show as fused, not as free).
      for (size_t i = 0; i + 1 < g->nodes().size(); ++i) {
        if (ctx.profile) ctx.profile->nodes.push_back(NodeTiming{g->nodes()[i], "fusion", false, 0.0});
      }
      ScopedNodeTimer timer(ctx.profile, g->nodes().back(), "fusion", false);
      NFUSE_RETURN_IF_ERROR_PLAIN(g->run(ctx, pool_, scratch_));
    }
    return ok_status();
  }

  PartitionTraffic traffic() const override { return traffic_; }

 private:
  std::vector<std::unique_ptr<FusedGroup>> groups_;
  cpu::ThreadPool pool_;
  cpu::Scratch scratch_;
  PartitionTraffic traffic_;
};

class FusionBackend final : public Backend {
 public:
  std::string_view name() const override { return "fusion"; }

  Support supports(const ir::Node& node, const ir::Graph& graph) const override {
    return supports_planned(node, graph, [](const ir::Value* v) -> const ir::TensorType& { return v->type; });
  }

  Support supports_planned(const ir::Node& node, const ir::Graph&, const TypeOf& type_of) const override {
    std::string why = member_rejection(node, type_of);
    return why.empty() ? Support::yes() : Support::no(std::move(why));
  }

  void reorder(Partition& partition, const ir::Graph&, const TypeOf& type_of) const override {
    partition.nodes = group_order(partition.nodes, type_of);
  }

  Result<std::unique_ptr<CompiledPartition>> compile(const Partition& partition, const CompileContext& ctx) override {
    TypeOf type_of = ctx.type_of;
    if (!type_of) type_of = [](const ir::Value* v) -> const ir::TensorType& { return v->type; };
    for (const ir::Node* n : partition.nodes) {
      std::string why = member_rejection(*n, type_of);
      if (!why.empty()) return unsupported(n->label() + ": backend 'fusion' cannot run it: " + why);
    }
    CompileContext cc = ctx;
    cc.type_of = type_of;
    std::vector<std::unique_ptr<FusedGroup>> groups;
    for (const GroupPlan& g : form_groups(partition.nodes, type_of)) {
      NFUSE_ASSIGN_OR_RETURN(auto group, FusedGroup::create(g.nodes, g.main_inputs, cc));
      groups.push_back(std::move(group));
    }
    auto part = std::make_unique<FusionPartition>(std::move(groups), std::max(1, ctx.threads));
    NFUSE_RETURN_IF_ERROR_PLAIN(part->reserve());
    return std::unique_ptr<CompiledPartition>(std::move(part));
  }
};

std::unique_ptr<Backend> make_fusion_backend() { return std::make_unique<FusionBackend>(); }

}  // namespace

NFUSE_REGISTER_BACKEND("fusion", make_fusion_backend);

}  // namespace nfuse::backends::fusion
