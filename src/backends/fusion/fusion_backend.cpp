// The `fusion` backend: regular 4-D f32 ops (Conv incl. depthwise and grouped, pools, element-wise
// activations, Add/Mul) with static shapes, cut into chains and executed depth-first in strips
// of rows (fused_group.h), so a MobileNet block's 6x-expanded tensor lives only in a per-thread
// line buffer. Kernels are the cpu backend's microkernels; what changes is the order in which
// rows are computed and where intermediates live. Every run's arena traffic is known exactly
// (traffic()).
#include <algorithm>
#include <unordered_map>

#include "backends/backend.h"
#include "backends/cpu/cpu_conv_util.h"
#include "backends/fusion/fused_group.h"
#include "backends/fusion/group_former.h"
#include "backends/fusion/strip_layer_impl.h"
#include "kernels/cpu_features.h"

namespace nfuse::backends::fusion {
namespace {

// Fusing pays when an intermediate would spill from L2 by this factor layer by layer.
constexpr int64_t kSpillFactor = 8;

class FusionPartition final : public CompiledPartition {
 public:
  // steps[i]: the partition's lifetime step of groups[i].
  FusionPartition(std::vector<std::unique_ptr<FusedGroup>> groups, std::vector<int> steps,
                  std::shared_ptr<ThreadPool> pool)
      : groups_(std::move(groups)), steps_(std::move(steps)), bound_(groups_.size(), nullptr), pool_(std::move(pool)) {
    // A scheduler's units, which bound how long another session's request waits for this one:
    // a group of a band per worker in its pieces (FusedGroup::pieces); one of more bands (a
    // batch) in up to kMaxPieces runs of at least two bands per worker, so that splitting costs
    // little balance.
    for (size_t g = 0; g < groups_.size(); ++g) {
      const size_t bands = groups_[g]->band_count();
      if (groups_[g]->pieces() > 1) {
        for (size_t p = 0; p < groups_[g]->pieces(); ++p) units_.push_back({g, 0, bands, p});
        continue;
      }
      const size_t parts = std::clamp<size_t>(bands / (2 * pool_->threads()), 1, cpu::kMaxPieces);
      for (size_t p = 0; p < parts; ++p) units_.push_back({g, bands * p / parts, bands * (p + 1) / parts, kWhole});
    }
    traffic_.known = true;
    for (const auto& g : groups_) {
      traffic_.groups.push_back(g->traffic());
      traffic_.fused_bytes += g->traffic().fused_bytes;
      traffic_.layerwise_bytes += g->traffic().layerwise_bytes;
    }
  }

  // Each group's line buffers, one set per worker.
  std::vector<ScratchNeed> scratch_needs() const override {
    std::vector<ScratchNeed> needs;
    for (size_t i = 0; i < groups_.size(); ++i)
      if (const size_t floats = per_worker(i)) needs.push_back({steps_[i], floats * pool_->threads() * sizeof(float)});
    return needs;
  }

  void bind_scratch(const std::vector<uint8_t*>& addresses) override {
    size_t next = 0;
    for (size_t i = 0; i < groups_.size(); ++i)
      if (per_worker(i)) bound_[i] = next < addresses.size() ? reinterpret_cast<float*>(addresses[next++]) : nullptr;
  }

  Status run(ExecContext& ctx) override { return run_units(ctx); }
  size_t units() const override { return units_.size(); }
  std::string unit_label(size_t unit) const override {
    if (unit >= units_.size()) return "";
    const Unit& u = units_[unit];
    std::string label = "group " + groups_[u.group]->traffic().label;
    if (u.piece != kWhole)
      label += " piece " + std::to_string(u.piece + 1) + "/" + std::to_string(groups_[u.group]->pieces());
    else if (u.first != 0 || u.end != groups_[u.group]->band_count())
      label += " bands " + std::to_string(u.first) + ".." + std::to_string(u.end);
    return label;
  }
  Status run_unit(ExecContext& ctx, size_t unit) override {
    const Unit& u = units_[unit];
    FusedGroup& g = *groups_[u.group];
    // A group's members run interleaved, so the profile books the group's time on its last
    // member and zero on the others (members show as fused, not as free).
    if (ctx.profile && u.first == 0 && (u.piece == kWhole || u.piece == 0)) {
      for (const ir::Node* n : g.operands()) ctx.profile->nodes.push_back(NodeTiming{n, "fusion", false, 0.0});
      for (size_t i = 0; i + 1 < g.nodes().size(); ++i)
        ctx.profile->nodes.push_back(NodeTiming{g.nodes()[i], "fusion", false, 0.0});
    }
    ScopedNodeTimer timer(ctx.profile, g.nodes().back(), "fusion", false);
    Scratch* scratch = &scratch_;
    if (bound_[u.group]) {
      view_.borrow(bound_[u.group], per_worker(u.group));
      scratch = &view_;
    } else if (!scratch_.reserve(pool_->threads(), g.scratch_floats())) {  // a no-op once large enough
      return out_of_memory(g.nodes().back()->label() + ": fusion line buffers");
    }
    if (u.piece != kWhole) return g.run_piece(ctx, *pool_, *scratch, u.piece);
    return g.run(ctx, *pool_, *scratch, u.first, u.end);
  }

  PartitionTraffic traffic() const override { return traffic_; }
  const ThreadPool* intra_op_pool() const override { return pool_.get(); }

 private:
  size_t per_worker(size_t group) const { return round_to_lines(groups_[group]->scratch_floats()); }

  std::vector<std::unique_ptr<FusedGroup>> groups_;
  static constexpr size_t kWhole = static_cast<size_t>(-1);
  struct Unit {
    size_t group, first, end;  // bands [first, end) of groups_[group]
    size_t piece;              // FusedGroup::run_piece's piece of every band, or kWhole bands
  };
  std::vector<Unit> units_;
  std::vector<int> steps_;
  std::vector<float*> bound_;  // each group's span of the arena (null: not bound)
  std::shared_ptr<ThreadPool> pool_;
  Scratch scratch_;  // own line buffers for groups the arena does not hold
  Scratch view_;     // the running group's span of the arena
  PartitionTraffic traffic_;
};

class FusionBackend final : public Backend {
 public:
  std::string_view name() const override { return "fusion"; }
  BackendTraits traits() const override {
    return BackendTraits{.keeps_intermediates_on_chip = true, .auto_priority = 2};
  }
  // A group's 3x3 layers run the cpu backend's Winograd kernels in strips (strip_conv.cpp).
  double mac_fraction(const ir::Node& node, const PlanView& plan) const override {
    return cpu::cpu_mac_fraction(node, plan);
  }

  Support supports(const ir::Node& node, const PlanView& plan) const override {
    Rejection why = member_rejection(node, plan);
    return why.empty() ? Support::native() : Support::no(why.reason, std::move(why.detail));
  }

  // A group of one stage (a lone Conv, or a Conv and the element-wise members that follow it)
  // keeps no rows between strips: it would run the cpu backend's kernels over the same tensors,
  // only split into more calls.
  std::vector<Refusal> refuse(const Partition& partition, const PlanView& type_of) const override {
    std::vector<Refusal> out;
    for (const GroupPlan& g : form_groups(partition.nodes, type_of)) {
      size_t stages = 0;
      for (size_t i = 0; i < g.nodes.size(); ++i)
        if (i == 0 || !elementwise_member(*g.nodes[i])) ++stages;
      const std::string label = g.nodes.front()->name + (g.nodes.size() > 1 ? " .. " + g.nodes.back()->name : "");
      std::string why;
      if (operand_only(*g.nodes.front())) {
        why = "the fusion engine reads a nearest Resize only as the operand of a fused member (Add, Mul, Concat) "
              "in the same group";
      } else if (stages == 1) {
        why = "the fused group " + label + " has one stage: nothing to keep in cache between strips";
      } else {
        // Layer by layer, an intermediate this small comes back from L2/L3 nearly as fast as
        // from a line buffer, and the strips' extra calls and halo copies win (measured on the
        // OCR detector at 960: 2.7-5.5 MB intermediates ran 0.8-0.9x fused, 14.7 MB 1.4x).
        int64_t largest = 0;
        size_t largest_width = 0;
        std::vector<const ir::Value*> kept;  // what the group keeps out of the arena
        for (size_t i = 0; i + 1 < g.nodes.size(); ++i) kept.push_back(g.nodes[i]->output(0));
        for (const ir::Node* r : g.operands) kept.push_back(r->output(0));
        for (const ir::Value* v : kept) {
          const ir::TensorType& t = type_of(v);
          auto d = t.shape.static_dims();
          if (!d || d->size() != 4) continue;
          const int64_t bytes = (*d)[0] * (*d)[1] * (*d)[2] * (*d)[3] * static_cast<int64_t>(ir::dtype_size(t.dtype));
          if (bytes > largest) {
            largest = bytes;
            largest_width = static_cast<size_t>((*d)[3]);
          }
        }
        const int64_t l2 = static_cast<int64_t>(kernels::cpu_features().l2_bytes);
        const int64_t threshold = kSpillFactor * l2;
        if (largest < threshold) {
          why = "the fused group " + label + " keeps intermediates of at most " + std::to_string(largest / 1024) +
                " KiB, which stay in cache layer by layer (below " + std::to_string(kSpillFactor) + " x L2 = " +
                std::to_string(threshold / 1024) + " KiB)";
        } else {
          // Narrow rows: every strip is a few short kernel calls per channel, and their fixed
          // cost outweighs the DRAM traffic saved (measured: groups whose largest intermediate
          // has 60- or 120-pixel rows ran 0.55-1.07x fused, 240 and wider 1.4-2.2x).
          if (largest_width >= kMinFusedWidth) continue;
          why = "the fused group " + label + " saves the traffic of rows of " + std::to_string(largest_width) +
                " pixels, too narrow for strips to pay for their calls (fused from " +
                std::to_string(kMinFusedWidth) + ")";
        }
      }
      for (const ir::Node* n : g.operands) out.push_back({n, why});
      for (const ir::Node* n : g.nodes) out.push_back({n, why});
    }
    return out;
  }

  void reorder(Partition& partition, const PlanView& type_of) const override {
    std::vector<const ir::Node*> order;
    std::vector<int> steps;
    int group = 0;
    for (const GroupPlan& g : form_groups(partition.nodes, type_of)) {
      order.insert(order.end(), g.operands.begin(), g.operands.end());
      order.insert(order.end(), g.nodes.begin(), g.nodes.end());
      steps.insert(steps.end(), g.operands.size() + g.nodes.size(), group++);
    }
    partition.nodes = std::move(order);
    partition.step_of_node = std::move(steps);
  }

  Result<std::unique_ptr<CompiledPartition>> compile(const Partition& partition, const CompileContext& ctx) override {
    const PlanView& type_of = ctx.type_of;
    for (const ir::Node* n : partition.nodes) {
      Rejection why = member_rejection(*n, type_of);
      if (!why.empty()) return unsupported(n->label() + ": backend 'fusion' cannot run it: " + why.text());
    }
    const CompileContext& cc = ctx;
    std::unordered_map<const ir::Node*, int> step_of;
    for (size_t i = 0; i < partition.nodes.size(); ++i)
      step_of[partition.nodes[i]] = i < partition.step_of_node.size() ? partition.step_of_node[i] : static_cast<int>(i);
    std::vector<std::unique_ptr<FusedGroup>> groups;
    std::vector<int> steps;
    for (const GroupPlan& g : form_groups(partition.nodes, type_of)) {
      NFUSE_ASSIGN_OR_RETURN(auto group, FusedGroup::create(g, cc));
      groups.push_back(std::move(group));
      steps.push_back(step_of.at(g.nodes.back()));
    }
    return std::unique_ptr<CompiledPartition>(std::make_unique<FusionPartition>(
        std::move(groups), std::move(steps), pool_for(ctx.pool, std::max(1, ctx.threads))));
  }
};

std::unique_ptr<Backend> make_fusion_backend() { return std::make_unique<FusionBackend>(); }

}  // namespace

void register_backend(BackendRegistry& registry) { registry.add("fusion", make_fusion_backend); }

}  // namespace nfuse::backends::fusion
