#include "passes/pass_manager.h"

#include <algorithm>

#include "passes/eliminate_dead_code.h"
#include "passes/fold_batch_norm.h"
#include "passes/fold_conv_add_bias.h"
#include "passes/fold_conv_mul_scale.h"
#include "passes/fuse_activation.h"
#include "passes/fuse_affine.h"
#include "passes/fuse_matmul_bias.h"
#include "passes/fuse_qdq_binary.h"
#include "passes/fuse_qdq_concat.h"
#include "passes/fuse_qdq_conv.h"
#include "passes/shape_through_quantize.h"
#include "passes/fuse_qdq_lookup.h"
#include "passes/fuse_qdq_matmul.h"
#include "passes/fuse_qdq_pool.h"
#include "passes/fuse_qdq_resize.h"
#include "passes/pool_before_pointwise_conv.h"
#include "passes/factor_residual_scale.h"
#include "passes/fuse_residual_add.h"
#include "passes/recognize_gelu.h"
#include "passes/recognize_layer_norm.h"
#include "passes/remove_identity.h"

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

std::vector<std::string> pass_names() {
  return {"eliminate_dead_code", "fold_constants", "remove_identity", "recognize_layer_norm",
          "recognize_gelu",      "fold_batch_norm", "fold_conv_mul_scale", "fold_conv_add_bias", "pool_before_pointwise_conv", "factor_residual_scale", "shape_through_quantize", "fuse_qdq_conv", "fuse_qdq_matmul", "fuse_qdq_binary", "fuse_qdq_concat", "fuse_qdq_pool", "fuse_qdq_resize", "fuse_qdq_lookup", "fold_dequantized_weights", "fuse_matmul_bias", "fuse_residual_add",
          "fuse_activation", "fuse_affine"};
}

std::vector<std::string> nonstandard_pass_names() {
  return {"recognize_gelu", "fuse_qdq_lookup", "fuse_matmul_bias", "fuse_residual_add", "fuse_activation", "fuse_affine"};
}

PassManager default_pass_manager(const OptimizeOptions& options) {
  auto enabled = [&](const std::string& name) {
    return std::find(options.disabled.begin(), options.disabled.end(), name) == options.disabled.end();
  };
  using Named = std::pair<std::string, PassFn>;
  auto keep = [](std::vector<Named> all, const auto& on) {
    std::erase_if(all, [&](const Named& p) { return !on(p.first); });
    return all;
  };
  const std::vector<std::string> outputs = options.outputs;
  const FoldConstantsOptions fold{options.evaluator, options.fold_max_elements};
  PassManager pm;
  pm.add_stage(keep({{"eliminate_dead_code",
                      [outputs](ir::Graph& g, PassLog& l) { return eliminate_dead_code(g, outputs, l); }}},
                    enabled),
               false);
  pm.add_stage(keep({{"fold_constants", [fold](ir::Graph& g, PassLog& l) { return fold_constants(g, fold, l); }},
                     {"remove_identity", remove_identity},
                     {"recognize_layer_norm", recognize_layer_norm},
                     {"recognize_gelu", recognize_gelu},
                     {"fold_batch_norm", fold_batch_norm},
                     {"fold_conv_mul_scale", fold_conv_mul_scale},
                     {"fold_conv_add_bias", fold_conv_add_bias},
                     {"pool_before_pointwise_conv", pool_before_pointwise_conv},
                     {"factor_residual_scale", factor_residual_scale},
                     {"eliminate_dead_code",
                      [](ir::Graph& g, PassLog& l) { return eliminate_dead_code(g, {}, l); }}},
                    enabled),
               true);
  pm.add_stage(keep({{"shape_through_quantize", shape_through_quantize},
                     {"fuse_qdq_conv", fuse_qdq_conv},
                     {"fuse_qdq_matmul", fuse_qdq_matmul},
                     {"fuse_qdq_binary", fuse_qdq_binary},
                     {"fuse_qdq_concat", fuse_qdq_concat},
                     {"fuse_qdq_pool", fuse_qdq_pool},
                     {"fuse_qdq_resize", fuse_qdq_resize},
                     {"fuse_qdq_lookup", [evaluator = options.evaluator](ir::Graph& g, PassLog& l) {
                        return fuse_qdq_lookup(g, evaluator, l);
                      }},
                     {"fold_dequantized_weights",
                      [fold](ir::Graph& g, PassLog& l) {
                        FoldConstantsOptions f = fold;
                        f.fold_dequantize = true;
                        return fold_constants(g, f, l);
                      }},
                     {"fuse_matmul_bias", fuse_matmul_bias},
                     {"fuse_residual_add", fuse_residual_add},
                     {"fuse_activation", fuse_activation},
                     {"fuse_affine", fuse_affine}},
                    enabled),
               false);
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
