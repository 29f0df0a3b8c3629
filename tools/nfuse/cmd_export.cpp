// `nfuse export MODEL -o OUT.onnx [--optimize [--no-fusions]]`: writes the imported graph (after
// nfuse's optimization passes with --optimize) back as standard ONNX. nfuse-internal constructs
// (fused epilogues, nfuse.Gelu) cannot be written: with --optimize, add --no-fusions to skip the
// passes that make them.
#include <cstdio>
#include <new>

#include "backends/ref/interpreter.h"
#include "cli_common.h"
#include "commands.h"
#include "frontend/onnx/onnx_exporter.h"
#include "passes/pass_manager.h"

namespace nfuse::cli {

int cmd_export(const ExportArgs& args) {
  auto graph = load(args.model);
  if (!graph.ok()) return report(graph.status());
  if (args.optimize) {
    passes::OptimizeOptions po;
    po.evaluator = backends::ref::node_evaluator();
    if (args.no_fusions) {
      // The passes whose results are not standard ONNX.
      po.disabled = passes::nonstandard_pass_names();
    }
    try {
      auto r = passes::optimize(**graph, po);
      if (!r.ok()) return report(r.status());
    } catch (const std::bad_alloc&) {
      return report(out_of_memory("optimizing '" + args.model + "': out of memory"));
    }
  }
  Status st = frontend::onnx::save_model(**graph, args.output);
  if (!st.ok()) return report(st);
  std::printf("wrote %s (%zu nodes)\n", args.output.c_str(), (*graph)->nodes().size());
  return 0;
}

}  // namespace nfuse::cli
