// The `ref` backend: runs every node with its reference kernel, one after the other.
#include "backends/backend.h"
#include "backends/ref/ref_kernel.h"
#include "ir/op_registry.h"

namespace nfuse::backends::ref {
namespace {

struct CompiledStep {
  const ir::Node* node;
  KernelFn fn;
  std::vector<int> input_slots;     // -1 for omitted inputs
  std::vector<int> implicit_slots;
  std::vector<int> output_slots;    // -1 for outputs nobody named
  std::vector<bool> output_preallocated;
  bool kernel_allocates = false;  // OpSchema::kernel_allocates_outputs
};

class RefPartition final : public CompiledPartition {
 public:
  explicit RefPartition(std::vector<CompiledStep> steps) : steps_(std::move(steps)) {}

  Status run(ExecContext& ctx) override { return run_units(ctx); }
  size_t units() const override { return steps_.size(); }
  Status run_unit(ExecContext& ctx, size_t unit) override {
    {
      const CompiledStep& s = steps_[unit];
      ScopedNodeTimer timer(ctx.profile, s.node, "ref", false);
      KernelArgs args{*s.node, {}, {}, {}, nullptr};
      args.inputs.reserve(s.input_slots.size());
      for (int slot : s.input_slots) args.inputs.push_back(slot < 0 ? nullptr : &ctx.slot(slot));
      for (int slot : s.implicit_slots) args.implicit_inputs.push_back(&ctx.slot(slot));
      std::vector<ir::Tensor> scratch(s.output_slots.size());  // for outputs nobody reads
      for (size_t i = 0; i < s.output_slots.size(); ++i) {
        args.outputs.push_back(s.output_slots[i] < 0 ? &scratch[i] : &ctx.slot(s.output_slots[i]));
      }
      bool all_preallocated = true;
      for (bool p : s.output_preallocated) all_preallocated = all_preallocated && p;
      if (s.kernel_allocates) {
        for (ir::Tensor* t : args.outputs) *t = ir::Tensor();
      } else if (!all_preallocated) {
        std::vector<ir::TensorType> types;
        NFUSE_RETURN_IF_ERROR_PLAIN(ir::infer_node(*s.node, args.inputs, &types, nullptr, {}, args.implicit_inputs));
        for (size_t i = 0; i < s.output_slots.size(); ++i) {
          if (s.output_preallocated[i]) continue;
          auto dims = types[i].shape.static_dims();
          if (!dims) return internal_error(s.node->label() + ": output shape unknown at run time");
          NFUSE_ASSIGN_OR_RETURN(*args.outputs[i], ir::Tensor::try_allocate(types[i].dtype, *dims));
          poison(*args.outputs[i]);
        }
      }
      NFUSE_RETURN_IF_ERROR_PLAIN(run_reference_kernel(s.fn, args));
    }
    return ok_status();
  }

 private:
  std::vector<CompiledStep> steps_;
};

class RefBackend final : public Backend {
 public:
  std::string_view name() const override { return "ref"; }
  BackendTraits traits() const override { return BackendTraits{.is_reference = true}; }
  bool aliases_reshapes() const override { return true; }  // ref_reshape.cpp skips the copy

  // Scalar loops: ~20x below the host's vector kernels in compute, whatever the op; the same
  // memory and dispatch costs.
  BackendProfile cost_profile(const BackendProfile& host) const override {
    constexpr double kScalarSlowdown = 20.0;
    BackendProfile p = Backend::cost_profile(host);
    p.gflops_f32 /= kScalarSlowdown;
    p.gflops_f32_depthwise /= kScalarSlowdown;
    p.gflops_int8 /= kScalarSlowdown;
    return p;
  }

  Support supports(const ir::Node& node, const PlanView&) const override {
    if (!KernelRegistry::global().find(node.op_type)) {
      return Support::no(SupportReason::kUnsupportedOp, "no reference kernel for op " + node.op_type);
    }
    return Support::native();
  }

  Result<std::unique_ptr<CompiledPartition>> compile(const Partition& partition,
                                                     const CompileContext& ctx) override {
    std::vector<CompiledStep> steps;
    for (const ir::Node* node : partition.nodes) {
      CompiledStep s{node, KernelRegistry::global().find(node->op_type), {}, {}, {}, {}};
      if (!s.fn) return unsupported(node->label() + ": no reference kernel for this op");
      const ir::OpSchema* schema = ir::OpRegistry::global().find(node->op_type, node->domain);
      s.kernel_allocates = schema && schema->kernel_allocates_outputs;
      for (const ir::Value* v : node->inputs) s.input_slots.push_back(v ? ctx.slot_of(v) : -1);
      for (const ir::Value* v : node->implicit_inputs) s.implicit_slots.push_back(ctx.slot_of(v));
      for (const ir::Value* v : node->outputs) {
        s.output_slots.push_back(v ? ctx.slot_of(v) : -1);
        s.output_preallocated.push_back(v && ctx.is_preallocated(v) && !s.kernel_allocates);
      }
      steps.push_back(std::move(s));
    }
    return std::unique_ptr<CompiledPartition>(new RefPartition(std::move(steps)));
  }
};

std::unique_ptr<Backend> make_ref_backend() { return std::make_unique<RefBackend>(); }

}  // namespace

void register_backend(BackendRegistry& registry) { registry.add("ref", make_ref_backend); }

}  // namespace nfuse::backends::ref
