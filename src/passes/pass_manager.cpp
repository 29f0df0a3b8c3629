#include "passes/pass_manager.h"

#include <algorithm>

#include "passes/compute_f16_in_f32.h"
#include "passes/eliminate_dead_code.h"
#include "passes/factor_residual_scale.h"
#include "passes/fold_batch_norm.h"
#include "passes/fold_constant_if.h"
#include "passes/fold_conv_add_bias.h"
#include "passes/fold_conv_mul_scale.h"
#include "passes/fuse_activation.h"
#include "passes/fuse_affine.h"
#include "passes/fuse_dynamic_quant.h"
#include "passes/fuse_matmul_bias.h"
#include "passes/fuse_qdq_binary.h"
#include "passes/fuse_qdq_concat.h"
#include "passes/fuse_qdq_conv.h"
#include "passes/fuse_qdq_conv_transpose.h"
#include "passes/fuse_qdq_lookup.h"
#include "passes/fuse_qdq_matmul.h"
#include "passes/fuse_qdq_pool.h"
#include "passes/fuse_qdq_resize.h"
#include "passes/fuse_residual_add.h"
#include "passes/lift_1d_to_2d.h"
#include "passes/pool_before_pointwise_conv.h"
#include "passes/recognize_gelu.h"
#include "passes/recognize_layer_norm.h"
#include "passes/remove_identity.h"
#include "passes/shape_through_quantize.h"

namespace nfuse::passes {

std::vector<std::string> PassReport::lines() const {
  std::vector<std::string> out;
  for (const PassRun& r : runs)
    for (const std::string& c : r.changes) out.push_back(r.pass + ": " + c);
  return out;
}

size_t PassReport::num_changes() const {
  size_t n = 0;
  for (const PassRun& r : runs) n += r.changes.size();
  return n;
}

size_t PassReport::num_changes(const std::string& pass) const {
  size_t n = 0;
  for (const PassRun& r : runs)
    if (r.pass == pass) n += r.changes.size();
  return n;
}

void PassManager::add_stage(std::vector<std::pair<std::string, PassFn>> passes, bool to_fixed_point) {
  stages_.push_back(Stage{std::move(passes), to_fixed_point});
}

Result<PassReport> PassManager::run(ir::Graph& graph, bool verify_each, int max_iterations) const {
  PassReport report;
  for (const Stage& stage : stages_) {
    const int rounds = stage.to_fixed_point ? std::max(max_iterations, 1) : 1;
    for (int it = 0; it < rounds; ++it) {
      bool changed = false;
      for (const auto& [name, fn] : stage.passes) {
        PassLog log;
        NFUSE_RETURN_IF_ERROR(fn(graph, log), "pass " + name);
        if (verify_each) NFUSE_RETURN_IF_ERROR(graph.verify(), "verifying the graph after pass " + name);
        changed = changed || !log.empty();
        report.runs.push_back(PassRun{name, it, log.lines()});
      }
      if (!changed) break;
    }
  }
  return report;
}

namespace {

// The one table of passes: the default pipeline in order, from which the pass names, the
// standard-ONNX subset and the stages are derived. `standard`: the pass's result is standard
// ONNX (export and quantization keep it); the others introduce nfuse-only ops or attributes.
struct PassEntry {
  const char* name;
  int stage;  // 0 once (the output filter), 1 to a fixed point (cleanup), 2 once (fusions)
  bool standard;
  PassFn (*make)(const OptimizeOptions& options, const FoldConstantsOptions& fold);
};

PassFn plain(Status (*fn)(ir::Graph&, PassLog&)) { return fn; }

const std::vector<PassEntry>& pass_table() {
  static const std::vector<PassEntry> table = {
      {"eliminate_dead_code", 0, true,
       [](const OptimizeOptions& o, const FoldConstantsOptions&) -> PassFn {
         return [outputs = o.outputs](ir::Graph& g, PassLog& l) { return eliminate_dead_code(g, outputs, l); };
       }},
      {"compute_f16_in_f32", 1, true, [](const auto&, const auto&) { return plain(compute_f16_in_f32); }},
      {"fold_constants", 1, true,
       [](const OptimizeOptions&, const FoldConstantsOptions& fold) -> PassFn {
         return [fold](ir::Graph& g, PassLog& l) { return fold_constants(g, fold, l); };
       }},
      {"fold_constant_if", 1, true, [](const auto&, const auto&) { return plain(fold_constant_if); }},
      {"remove_identity", 1, true, [](const auto&, const auto&) { return plain(remove_identity); }},
      {"recognize_layer_norm", 1, true, [](const auto&, const auto&) { return plain(recognize_layer_norm); }},
      {"recognize_gelu", 1, false, [](const auto&, const auto&) { return plain(recognize_gelu); }},
      {"fold_batch_norm", 1, true, [](const auto&, const auto&) { return plain(fold_batch_norm); }},
      {"fold_conv_mul_scale", 1, true, [](const auto&, const auto&) { return plain(fold_conv_mul_scale); }},
      {"fold_conv_add_bias", 1, true, [](const auto&, const auto&) { return plain(fold_conv_add_bias); }},
      {"pool_before_pointwise_conv", 1, true,
       [](const auto&, const auto&) { return plain(pool_before_pointwise_conv); }},
      {"factor_residual_scale", 1, true, [](const auto&, const auto&) { return plain(factor_residual_scale); }},
      {"eliminate_dead_code", 1, true,
       [](const OptimizeOptions&, const FoldConstantsOptions&) -> PassFn {
         return [](ir::Graph& g, PassLog& l) { return eliminate_dead_code(g, {}, l); };
       }},
      {"shape_through_quantize", 2, true, [](const auto&, const auto&) { return plain(shape_through_quantize); }},
      {"fuse_qdq_conv", 2, true, [](const auto&, const auto&) { return plain(fuse_qdq_conv); }},
      {"fuse_qdq_conv_region", 2, false, [](const auto&, const auto&) { return plain(fuse_qdq_conv_region); }},
      {"fuse_qdq_conv_transpose", 2, true, [](const auto&, const auto&) { return plain(fuse_qdq_conv_transpose); }},
      {"fuse_qdq_matmul", 2, true, [](const auto&, const auto&) { return plain(fuse_qdq_matmul); }},
      {"fuse_qdq_binary", 2, true, [](const auto&, const auto&) { return plain(fuse_qdq_binary); }},
      {"fuse_qdq_concat", 2, true, [](const auto&, const auto&) { return plain(fuse_qdq_concat); }},
      {"fuse_qdq_pool", 2, true, [](const auto&, const auto&) { return plain(fuse_qdq_pool); }},
      {"fuse_qdq_resize", 2, true, [](const auto&, const auto&) { return plain(fuse_qdq_resize); }},
      {"fuse_qdq_lookup", 2, false,
       [](const OptimizeOptions& o, const FoldConstantsOptions&) -> PassFn {
         return [evaluator = o.evaluator](ir::Graph& g, PassLog& l) { return fuse_qdq_lookup(g, evaluator, l); };
       }},
      {"fold_dequantized_weights", 2, true,
       [](const OptimizeOptions&, const FoldConstantsOptions& fold) -> PassFn {
         return [fold](ir::Graph& g, PassLog& l) {
           FoldConstantsOptions f = fold;
           f.fold_dequantize = true;
           return fold_constants(g, f, l);
         };
       }},
      {"fuse_dynamic_quant", 2, false, [](const auto&, const auto&) { return plain(fuse_dynamic_quant); }},
      {"fuse_matmul_bias", 2, false, [](const auto&, const auto&) { return plain(fuse_matmul_bias); }},
      {"fuse_residual_add", 2, false, [](const auto&, const auto&) { return plain(fuse_residual_add); }},
      {"fuse_activation", 2, false, [](const auto&, const auto&) { return plain(fuse_activation); }},
      {"fuse_affine", 2, false, [](const auto&, const auto&) { return plain(fuse_affine); }},
      {"lift_1d_to_2d", 2, false, [](const auto&, const auto&) { return plain(lift_1d_to_2d); }},
  };
  return table;
}

}  // namespace

std::vector<std::string> pass_names() {
  std::vector<std::string> names;
  for (const PassEntry& e : pass_table())
    if (std::find(names.begin(), names.end(), e.name) == names.end()) names.push_back(e.name);
  return names;
}

std::vector<std::string> nonstandard_pass_names() {
  std::vector<std::string> names;
  for (const PassEntry& e : pass_table())
    if (!e.standard) names.push_back(e.name);
  return names;
}

PassManager default_pass_manager(const OptimizeOptions& options) {
  auto enabled = [&](const std::string& name) {
    return std::find(options.disabled.begin(), options.disabled.end(), name) == options.disabled.end();
  };
  const FoldConstantsOptions fold{options.evaluator, options.fold_max_elements};
  constexpr int kStages = 3;
  PassManager pm;
  for (int stage = 0; stage < kStages; ++stage) {
    std::vector<std::pair<std::string, PassFn>> passes;
    for (const PassEntry& e : pass_table())
      if (e.stage == stage && enabled(e.name)) passes.emplace_back(e.name, e.make(options, fold));
    pm.add_stage(std::move(passes), /*to_fixed_point=*/stage == 1);
  }
  return pm;
}

Result<PassReport> optimize(ir::Graph& graph, const OptimizeOptions& options) {
  const std::vector<std::string> known = pass_names();
  for (const std::string& name : options.disabled) {
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      std::string list;
      for (const std::string& k : known) list += (list.empty() ? "" : ", ") + k;
      return invalid_argument("unknown pass '" + name + "' (passes: " + list + ")");
    }
  }
  return default_pass_manager(options).run(graph, options.verify_each, options.max_iterations);
}

}  // namespace nfuse::passes
