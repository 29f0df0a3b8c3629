// The `cpu` backend: optimised FP32 kernels (GEMM-based and direct convolution, pooling,
// Gemm/MatMul, element-wise, Softmax, LayerNormalization, Slice) on an intra-op thread pool;
// every node it has no optimised kernel for runs on its reference kernel, and the compiled
// partition records which, so reports can say so.

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>

#include "backends/backend.h"
#include "backends/cpu/cpu_conv_util.h"
#include "backends/cpu/cpu_op.h"
#include "backends/cpu/cpu_qlinear_ops.h"
#include "backends/ref/ref_kernel.h"
#include "ir/op_registry.h"

namespace nfuse::backends::cpu {

// W8A16 nfuse.QLinearConv16 / nfuse.QLinearMatMul16 (cpu_qlinear_conv16.cpp, cpu_qlinear_matmul16.cpp).
Result<std::unique_ptr<CpuOp>> make_qlinear_conv16(const ir::Node& node, const CompileContext& ctx);
Result<std::unique_ptr<CpuOp>> make_qlinear_matmul16(const ir::Node& node, const CompileContext& ctx);
// com.microsoft.MatMulNBits: int4 weights dequantized at compile time onto the f32 GEMM (cpu_matmul_nbits.cpp).
Result<std::unique_ptr<CpuOp>> make_matmul_nbits(const ir::Node& node, const CompileContext& ctx);
// nfuse.DynamicQuantMatMul: dynamic quantization on the qu8 GEMM (cpu_dynamic_quant_matmul.cpp).
Result<std::unique_ptr<CpuOp>> make_dynamic_quant_matmul(const ir::Node& node, const CompileContext& ctx);
// Exp, Log, Sqrt, Erf, nfuse.Gelu on the f32-vmath kernels (cpu_math.cpp).
Result<std::unique_ptr<CpuOp>> make_math(const ir::Node& node, const CompileContext& ctx);
// ReduceSum/Mean/Max/Min/SumSquare/L2 over one run of axes (cpu_reduce.cpp).
Result<std::unique_ptr<CpuOp>> make_reduce(const ir::Node& node, const CompileContext& ctx);
// Cast between float32 and float16 on the f16-vcvt kernels (cpu_cast.cpp).
Result<std::unique_ptr<CpuOp>> make_cast(const ir::Node& node, const CompileContext& ctx);
// Comparisons, boolean logic and Where with any broadcast (cpu_select.cpp).
Result<std::unique_ptr<CpuOp>> make_select(const ir::Node& node, const CompileContext& ctx);
// Gather, Expand, Tile and Pad as row copies (cpu_copy_ops.cpp).
Result<std::unique_ptr<CpuOp>> make_copy_op(const ir::Node& node, const CompileContext& ctx);
// nfuse.DynamicQuantConv: the same for 2-D convolutions (cpu_dynamic_quant_conv.cpp).
Result<std::unique_ptr<CpuOp>> make_dynamic_quant_conv(const ir::Node& node, const CompileContext& ctx);

const ir::Tensor* constant_f32(const ir::Value* v) {
  if (!v || !v->constant || v->constant->dtype() != ir::DType::kF32) return nullptr;
  return &*v->constant;
}

bool is_f32(const ir::Value* v) { return v && v->type.dtype == ir::DType::kF32; }

size_t pieces_for_work(double macs, size_t threads) {
  const double per_piece = kPieceMacsPerThread * static_cast<double>(std::max<size_t>(threads, 1));
  if (!(macs > per_piece)) return 1;
  return static_cast<size_t>(std::min(std::ceil(macs / per_piece), static_cast<double>(kMaxPieces)));
}

size_t items_per_task(size_t items, size_t item_work, size_t threads, size_t min_work) {
  const size_t for_work = min_work / std::max<size_t>(item_work, 1);
  const size_t for_threads = items / (4 * std::max<size_t>(threads, 1));
  return std::max<size_t>(1, std::min(for_work, for_threads));
}

namespace {

// Runs a node on its reference kernel, by the same path as the ref backend. With a subgraph
// runner (control flow), the kernel only dispatches: the bodies run on the plan's backends.
class RefOp final : public CpuOp {
 public:
  RefOp(const ir::Node& node, ref::KernelFn fn, std::shared_ptr<const SubgraphRunner> run_subgraph = nullptr)
      : node_(node), fn_(fn), run_subgraph_(std::move(run_subgraph)) {}
  Status run(const OpTensors& t, RunContext& rc) override {
    ref::KernelArgs args{node_, t.inputs, t.outputs, t.implicit_inputs, run_subgraph_.get(), rc.profile};
    return ref::run_reference_kernel(fn_, args);
  }

 private:
  const ir::Node& node_;
  ref::KernelFn fn_;
  std::shared_ptr<const SubgraphRunner> run_subgraph_;
};

bool is_control_flow(const ir::Node& node) {
  return node.domain.empty() && (node.op_type == "If" || node.op_type == "Loop" || node.op_type == "Scan");
}

struct Step {
  const ir::Node* node = nullptr;
  std::unique_ptr<CpuOp> op;
  bool reference = false;
  std::vector<int> input_slots, implicit_slots, output_slots;
  std::vector<bool> output_preallocated;
  bool all_preallocated = true;
  // Per-worker scratch and shared temporaries the op needs with the plan's shapes (floats,
  // multiples of 16; 0 where none or the shapes are known only at run time), and where the
  // planner put them in the arena (null until bound).
  size_t planned_scratch = 0, planned_shared = 0;
  float* bound = nullptr;
  size_t pieces = 1;    // CpuOp::pieces with the plan's shapes: the scheduler's units of this op
  size_t progress = 0;  // RunContext::progress between its pieces
};

class CpuPartition final : public CompiledPartition {
 public:
  CpuPartition(std::vector<Step> steps, std::shared_ptr<ThreadPool> pool)
      : steps_(std::move(steps)), pool_(std::move(pool)) {
    for (size_t i = 0; i < steps_.size(); ++i) {
      if (steps_[i].reference) reference_nodes_.push_back(steps_[i].node->label());
      for (size_t piece = 0; piece < steps_[i].pieces; ++piece) units_.push_back({i, piece});
    }
  }

  std::vector<std::string> reference_nodes() const override { return reference_nodes_; }
  const ThreadPool* intra_op_pool() const override { return pool_.get(); }

  std::vector<ScratchNeed> scratch_needs() const override {
    std::vector<ScratchNeed> needs;
    for (size_t i = 0; i < steps_.size(); ++i) {
      const size_t floats = steps_[i].planned_scratch * pool_->threads() + steps_[i].planned_shared;
      if (floats) needs.push_back({static_cast<int>(i), floats * sizeof(float)});
    }
    return needs;
  }

  void bind_scratch(const std::vector<uint8_t*>& addresses) override {
    size_t next = 0;
    for (Step& s : steps_) {
      if (!s.planned_scratch && !s.planned_shared) continue;
      s.bound = next < addresses.size() ? reinterpret_cast<float*>(addresses[next]) : nullptr;
      ++next;
    }
  }

  Status run(ExecContext& ctx) override { return run_units(ctx); }
  size_t units() const override { return units_.size(); }
  std::string unit_label(size_t unit) const override {
    if (unit >= units_.size()) return "";
    const Step& s = steps_[units_[unit].step];
    std::string label = s.node->label();
    if (s.pieces > 1) label += " piece " + std::to_string(units_[unit].piece + 1) + "/" + std::to_string(s.pieces);
    return label;
  }
  Status run_unit(ExecContext& ctx, size_t unit) override {
    const Unit u = units_[unit];
    Step& s = steps_[u.step];
    ScopedNodeTimer timer(ctx.profile, s.node, "cpu", s.reference);
    // A later piece runs with the operands, outputs and scratch its first piece set up: between
    // them only other sessions' partitions run, and nothing of this one changes.
    if (u.piece == 0) NFUSE_RETURN_IF_ERROR_PLAIN(begin_step(ctx, s));
    rc_->piece = u.piece;
    rc_->pieces = s.pieces;
    rc_->progress = &s.progress;
    return s.op->run(tensors_, *rc_);
  }

 private:
  // Binds the step's operands and outputs and chooses its scratch (rc_).
  Status begin_step(ExecContext& ctx, Step& s) {
    OpTensors& t = tensors_;
    std::vector<ir::Tensor>& unnamed = unnamed_;
    t.inputs.clear();
    t.implicit_inputs.clear();
    t.outputs.clear();
    for (int slot : s.input_slots) t.inputs.push_back(slot < 0 ? nullptr : &ctx.slot(slot));
    for (int slot : s.implicit_slots) t.implicit_inputs.push_back(&ctx.slot(slot));
    unnamed.assign(s.output_slots.size(), ir::Tensor());
    for (size_t i = 0; i < s.output_slots.size(); ++i)
      t.outputs.push_back(s.output_slots[i] < 0 ? &unnamed[i] : &ctx.slot(s.output_slots[i]));
    if (!s.all_preallocated) NFUSE_RETURN_IF_ERROR_PLAIN(allocate_outputs(s, t));
    const size_t need = s.op->scratch_floats(t, pool_->threads());
    const size_t shared = s.op->shared_floats(t);
    const bool in_arena = s.bound && need <= s.planned_scratch && shared <= s.planned_shared;
    if (in_arena) {
      bound_view_.borrow(s.bound, s.planned_scratch);  // the workers' buffers, then the shared ones
    } else {
      // Not planned (shapes known only now) or not bound: memory of the partition's own.
      if (!scratch_.reserve(pool_->threads(), need))  // a no-op once large enough
        return out_of_memory(s.node->label() + ": " + std::to_string(need) + " floats of scratch per worker");
      if (shared > shared_.size() && !shared_.resize(shared))
        return out_of_memory(s.node->label() + ": " + std::to_string(shared) + " floats of temporaries");
    }
    rc_.emplace(RunContext{*pool_, in_arena ? bound_view_ : scratch_, ctx.profile});
    rc_->shared = in_arena ? s.bound + s.planned_scratch * pool_->threads() : shared_.data();
    return ok_status();
  }

  static Status allocate_outputs(const Step& s, OpTensors& t) {
    std::vector<ir::TensorType> types;
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::infer_node(*s.node, t.inputs, &types, nullptr, {}, t.implicit_inputs));
    for (size_t i = 0; i < s.output_slots.size(); ++i) {
      if (s.output_preallocated[i]) continue;
      auto dims = types[i].shape.static_dims();
      if (!dims) return internal_error(s.node->label() + ": output shape unknown at run time");
      // No NaN poison here, unlike ref: this runs on every inference for graph outputs, and the
      // arena (poisoned once per plan under NFUSE_POISON_ARENA, which the tests set) and the
      // ref/golden comparisons already catch kernels that skip elements.
      NFUSE_RETURN_IF_ERROR_PLAIN(ir::reuse_or_allocate(t.outputs[i], types[i].dtype, *dims));
    }
    return ok_status();
  }

  struct Unit {
    size_t step, piece;
  };
  std::vector<Step> steps_;
  std::vector<Unit> units_;  // every step's pieces in order
  std::shared_ptr<ThreadPool> pool_;
  Scratch scratch_;                  // own memory for steps the arena does not hold
  AlignedFloats shared_;             // CpuOp::shared_floats, the same, grown to the largest op's
  Scratch bound_view_;               // the running step's span of the arena
  OpTensors tensors_;                // the running step's operands, reused so a run allocates nothing here
  std::optional<RunContext> rc_;     // the running step's pool and scratch (RunContext holds references)
  std::vector<ir::Tensor> unnamed_;  // outputs nobody reads
  std::vector<std::string> reference_nodes_;
};

using OpFactory = Result<std::unique_ptr<CpuOp>> (*)(const ir::Node& node, const CompileContext& ctx);

Result<std::unique_ptr<CpuOp>> make_max_pool(const ir::Node& node, const CompileContext& ctx) {
  return is_f32(node.input(0)) ? make_pool(node, ctx) : make_qlinear_pool(node, ctx);  // u8 / i8
}

// The ops with optimized cpu kernels: supports() (and so `nfuse ops`, docs/ops.md) and
// compile() both read this one table. A factory may still return nullptr for a node outside
// what its kernels cover (a dtype, a shape); that node then runs on the reference kernel and
// the partition reports it.
const std::map<std::pair<std::string, std::string>, OpFactory>& optimized_ops() {
  static const std::map<std::pair<std::string, std::string>, OpFactory> table = {
      {{"", "Conv"}, make_conv},
      {{"", "ConvTranspose"}, make_conv_transpose},
      {{"", "QLinearConv"}, make_qlinear_conv},
      {{"", "QLinearMatMul"}, make_qlinear_matmul},
      {{"", "MaxPool"}, make_max_pool},
      {{"", "AveragePool"}, make_pool},
      {{"", "GlobalAveragePool"}, make_pool},
      {{"", "Gemm"}, make_gemm},
      {{"", "MatMul"}, make_gemm},
      {{"", "Softmax"}, make_softmax},
      {{"", "Resize"}, make_resize},
      {{"", "LSTM"}, make_rnn},
      {{"", "GRU"}, make_rnn},
      {{"", "Pow"}, make_pow},
      {{"", "QuantizeLinear"}, make_quantize_linear},
      {{"", "DequantizeLinear"}, make_quantize_linear},
      {{"", "LayerNormalization"}, make_layer_norm},
      {{"", "Slice"}, make_slice},
      {{"", "Concat"}, make_layout},
      {{"", "Split"}, make_layout},
      {{"", "Transpose"}, make_layout},
      {{"", "Reshape"}, make_layout},
      {{"", "Flatten"}, make_layout},
      {{"", "Squeeze"}, make_layout},
      {{"", "Unsqueeze"}, make_layout},
      {{"", "DepthToSpace"}, make_layout},
      {{"", "SpaceToDepth"}, make_layout},
      {{"", "Add"}, make_elementwise},
      {{"", "Sub"}, make_elementwise},
      {{"", "Mul"}, make_elementwise},
      {{"", "Div"}, make_elementwise},
      {{"", "Max"}, make_elementwise},
      {{"", "Min"}, make_elementwise},
      {{"", "Sum"}, make_variadic},
      {{"", "Mean"}, make_variadic},
      {{"", "TopK"}, make_topk},
      {{"", "Relu"}, make_elementwise},
      {{"", "Tanh"}, make_elementwise},
      {{"", "Sigmoid"}, make_elementwise},
      {{"", "LeakyRelu"}, make_elementwise},
      {{"", "HardSigmoid"}, make_elementwise},
      {{"", "HardSwish"}, make_elementwise},
      {{"", "Clip"}, make_elementwise},
      {{"nfuse", "QLinearConv16"}, make_qlinear_conv16},
      {{"nfuse", "QLinearMatMul16"}, make_qlinear_matmul16},
      {{"nfuse", "QLinearLookup"}, make_qlinear_lookup},
      {{"nfuse", "QLinearRegion"}, make_qlinear_region},
      {{"nfuse", "QLinearConvRegion"}, make_qlinear_conv_region},
      {{"nfuse", "DynamicQuantMatMul"}, make_dynamic_quant_matmul},
      {{"nfuse", "DynamicQuantConv"}, make_dynamic_quant_conv},
      {{"nfuse", "Gelu"}, make_math},
      {{"", "Exp"}, make_math},
      {{"", "Log"}, make_math},
      {{"", "Sqrt"}, make_math},
      {{"", "Erf"}, make_math},
      {{"", "Cast"}, make_cast},
      {{"", "ReduceSum"}, make_reduce},
      {{"", "ReduceMean"}, make_reduce},
      {{"", "ReduceMax"}, make_reduce},
      {{"", "ReduceMin"}, make_reduce},
      {{"", "ReduceSumSquare"}, make_reduce},
      {{"", "ReduceL2"}, make_reduce},
      {{"", "Equal"}, make_select},
      {{"", "Less"}, make_select},
      {{"", "Greater"}, make_select},
      {{"", "LessOrEqual"}, make_select},
      {{"", "GreaterOrEqual"}, make_select},
      {{"", "And"}, make_select},
      {{"", "Or"}, make_select},
      {{"", "Xor"}, make_select},
      {{"", "Not"}, make_select},
      {{"", "Where"}, make_select},
      {{"", "Gather"}, make_copy_op},
      {{"", "Expand"}, make_copy_op},
      {{"", "Tile"}, make_copy_op},
      {{"", "Pad"}, make_copy_op},
      {{"com.microsoft", "QuantizeLinear"}, make_quantize_linear},
      {{"com.microsoft", "DequantizeLinear"}, make_quantize_linear},
      {{"com.microsoft", "QLinearAdd"}, make_qlinear_binary},
      {{"com.microsoft", "QLinearMul"}, make_qlinear_binary},
      {{"com.microsoft", "QLinearConcat"}, make_qlinear_concat},
      {{"com.microsoft", "QLinearGlobalAveragePool"}, make_qlinear_pool},
      {{"com.microsoft", "MatMulNBits"}, make_matmul_nbits},
  };
  return table;
}

OpFactory optimized_factory(const ir::Node& node) {
  const auto& table = optimized_ops();
  auto it = table.find({node.domain, node.op_type});
  return it == table.end() ? nullptr : it->second;
}

// The optimised op for `node`, or nullptr when it has none.
Result<std::unique_ptr<CpuOp>> make_optimized(const ir::Node& node, const CompileContext& ctx) {
  OpFactory make = optimized_factory(node);
  return make ? make(node, ctx) : std::unique_ptr<CpuOp>();
}

// Shape-only tensors (no data) for the node's inputs when every shape is static, so ops can size
// their scratch at compile time.
bool static_shapes(const ir::Node& node, const PlanView& plan, OpTensors* t, std::vector<ir::Tensor>* storage) {
  storage->reserve(node.inputs.size() + node.implicit_inputs.size());
  auto add = [&](const ir::Value* v) -> const ir::Tensor* {
    if (!v) return nullptr;
    if (v->constant) return &*v->constant;
    const ir::TensorType& type = plan.type(v);
    auto dims = type.shape.static_dims();
    if (!dims) return nullptr;
    storage->push_back(ir::Tensor::borrow(type.dtype, *dims, nullptr));
    return &storage->back();
  };
  for (const ir::Value* v : node.inputs) {
    t->inputs.push_back(add(v));
    if (v && !t->inputs.back()) return false;
  }
  for (const ir::Value* v : node.implicit_inputs) {
    t->implicit_inputs.push_back(add(v));
    if (!t->implicit_inputs.back()) return false;
  }
  return true;
}

// The same for the node's outputs (after static_shapes, into the same storage).
bool static_output_shapes(const ir::Node& node, const PlanView& plan, OpTensors* t, std::vector<ir::Tensor>* storage) {
  for (const ir::Value* v : node.outputs) {
    if (!v) return false;
    const ir::TensorType& type = plan.type(v);
    auto dims = type.shape.static_dims();
    if (!dims) return false;
    storage->push_back(ir::Tensor::borrow(type.dtype, *dims, nullptr));
    t->outputs.push_back(&storage->back());
  }
  return true;
}

class CpuBackend final : public Backend {
 public:
  std::string_view name() const override { return "cpu"; }
  BackendTraits traits() const override { return BackendTraits{.is_general_fallback = true, .auto_priority = 1}; }
  double mac_fraction(const ir::Node& node, const PlanView& plan) const override {
    return cpu_mac_fraction(node, plan);
  }
  // LayoutOp's copy and the ref kernel it falls back to both skip it when input and output share memory.
  bool aliases_reshapes() const override { return true; }

  // Everything with a reference kernel runs. Ops with optimized kernels say yes plainly (compile
  // may still fall back for a dtype or shape they do not cover, and reports that node); the
  // rest say yes with the reason that they run on the reference kernel.
  Support supports(const ir::Node& node, const PlanView&) const override {
    if (!ref::KernelRegistry::global().find(node.op_type)) {
      return Support::no(SupportReason::kUnsupportedOp, "no cpu or reference kernel for op " + node.op_type);
    }
    // A plan compiles control-flow bodies on its backends (CompileContext::run_subgraph); the
    // bodies' own nodes then show where they ran.
    if (!optimized_factory(node) && !is_control_flow(node)) {
      return Support::reference_kernel("no optimized cpu kernel for " + node.op_type);
    }
    return Support::native();
  }

  Result<std::unique_ptr<CompiledPartition>> compile(const Partition& partition, const CompileContext& ctx) override {
    std::vector<Step> steps;
    const size_t threads = static_cast<size_t>(std::max(ctx.threads, 1));
    for (const ir::Node* node : partition.nodes) {
      Step s;
      s.node = node;
      NFUSE_ASSIGN_OR_RETURN(s.op, make_optimized(*node, ctx));
      const ir::OpSchema* schema = ir::OpRegistry::global().find(node->op_type, node->domain);
      const bool kernel_allocates = schema && schema->kernel_allocates_outputs;
      if (is_control_flow(*node) && ctx.run_subgraph) {
        s.op = std::make_unique<RefOp>(*node, ref::KernelRegistry::global().find(node->op_type), ctx.run_subgraph);
      } else if (!s.op || kernel_allocates) {
        s.op = make_ref_op(*node);
        if (!s.op) return unsupported(node->label() + ": no cpu or reference kernel for this op");
        s.reference = true;
      }
      for (const ir::Value* v : node->inputs) s.input_slots.push_back(v ? ctx.slot_of(v) : -1);
      for (const ir::Value* v : node->implicit_inputs) s.implicit_slots.push_back(ctx.slot_of(v));
      for (const ir::Value* v : node->outputs) {
        s.output_slots.push_back(v ? ctx.slot_of(v) : -1);
        const bool pre = v && ctx.is_preallocated(v) && !kernel_allocates;
        s.output_preallocated.push_back(pre);
        s.all_preallocated = s.all_preallocated && pre;
      }
      if (kernel_allocates) s.all_preallocated = true;  // the reference kernel sizes them itself
      OpTensors shapes;
      std::vector<ir::Tensor> storage;  // never reallocated: `shapes` points into it
      storage.reserve(node->inputs.size() + node->implicit_inputs.size() + node->outputs.size());
      if (!s.reference && static_shapes(*node, ctx.type_of, &shapes, &storage)) {
        s.planned_scratch = round_to_lines(s.op->scratch_floats(shapes, threads));
        s.planned_shared = round_to_lines(s.op->shared_floats(shapes));
        if (static_output_shapes(*node, ctx.type_of, &shapes, &storage))
          s.pieces = std::clamp<size_t>(s.op->pieces(shapes, threads), 1, kMaxPieces);
      }
      steps.push_back(std::move(s));
    }
    return std::unique_ptr<CompiledPartition>(
        std::make_unique<CpuPartition>(std::move(steps), pool_for(ctx.pool, ctx.threads)));
  }
};

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace

std::unique_ptr<CpuOp> make_ref_op(const ir::Node& node) {
  ref::KernelFn fn = ref::KernelRegistry::global().find(node.op_type);
  return fn ? std::make_unique<RefOp>(node, fn) : nullptr;
}

void register_backend(BackendRegistry& registry) { registry.add("cpu", make_cpu_backend); }

}  // namespace nfuse::backends::cpu
