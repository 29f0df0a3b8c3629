// The pass manager: an ordered list of named graph passes, some run once, some iterated to a
// fixed point, with Graph::verify() after each pass in debug and test builds and a record of
// every rewrite for `nfuse inspect --passes`.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "nfuse/status.h"
#include "passes/fold_constants.h"
#include "passes/pass_log.h"

namespace nfuse::passes {

// A pass: rewrites the graph in place, appending one line per rewrite to the log. Returns an
// error only for a graph it cannot process (bad options, malformed nodes); a pattern that does
// not apply is skipped, not an error.
using PassFn = std::function<Status(ir::Graph&, PassLog&)>;

struct OptimizeOptions {
  // Runs nodes for fold_constants (the runtime passes backends::ref::node_evaluator()). Without
  // one, only shape-like values (Shape, Size of static shapes) fold.
  NodeEvaluator evaluator;
  // fold_constants' size cap (see FoldConstantsOptions).
  int64_t fold_max_elements = kDefaultFoldMaxElements;
  // Graph outputs to keep (`--outputs a,b`); empty keeps them all. Unknown names fail.
  std::vector<std::string> outputs;
  // Names of passes not to run (e.g. {"fuse_activation"} for a backend without epilogues).
  std::vector<std::string> disabled;
  // Verify the graph after every pass (on by default in debug builds; tests turn it on).
#ifdef NDEBUG
  bool verify_each = false;
#else
  bool verify_each = true;
#endif
  // Bound on fixed-point iterations of the cleanup stage.
  int max_iterations = 8;
};

// One run of one pass and what it changed.
struct PassRun {
  std::string pass;
  int iteration = 0;                 // 0-based, within its stage
  std::vector<std::string> changes;  // lines without the pass-name prefix
};

struct PassReport {
  std::vector<PassRun> runs;
  // Every change as "pass: line", in the order made.
  std::vector<std::string> lines() const;
  size_t num_changes() const;
  // Changes made by one pass, over all its runs.
  size_t num_changes(const std::string& pass) const;
};

class PassManager {
 public:
  // Appends a stage: its passes run in order, once, or repeated until none changes anything
  // (at most `max_iterations` rounds) when `to_fixed_point`.
  void add_stage(std::vector<std::pair<std::string, PassFn>> passes, bool to_fixed_point);
  // Runs every stage; the first failing pass (or verify) stops it with its name as context.
  Result<PassReport> run(ir::Graph& graph, bool verify_each, int max_iterations) const;

 private:
  struct Stage {
    std::vector<std::pair<std::string, PassFn>> passes;
    bool to_fixed_point = false;
  };
  std::vector<Stage> stages_;
};

// nfuse's default pipeline: eliminate_dead_code (with the output filter), then to a fixed point
// fold_constants, remove_identity, recognize_layer_norm, recognize_gelu, fold_batch_norm,
// fold_conv_mul_scale, fold_conv_add_bias, pool_before_pointwise_conv,
// factor_residual_scale, eliminate_dead_code; then fuse_qdq_conv (before
// fuse_activation, which would otherwise take a QDQ Conv's Relu), fuse_qdq_matmul, fuse_matmul_bias,
// fuse_residual_add, fuse_activation and fuse_affine.
PassManager default_pass_manager(const OptimizeOptions& options);
// Names of the passes default_pass_manager can run, in pipeline order.
std::vector<std::string> pass_names();
// The passes whose results are not standard ONNX (nfuse-domain ops, fused attributes): what
// `nfuse export --optimize --no-fusions` and the quantizer disable to keep a graph exportable.
std::vector<std::string> nonstandard_pass_names();
// Runs the default pipeline; kInvalidArgument for an unknown pass in `disabled` or an unknown
// output name.
Result<PassReport> optimize(ir::Graph& graph, const OptimizeOptions& options);

}  // namespace nfuse::passes
