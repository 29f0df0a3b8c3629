// `nfuse partition`: where every node would run and why, without running the model.
#include <cstdio>
#include <fstream>

#include "cli_common.h"
#include "commands.h"
#include "partition/partition_report.h"

namespace nfuse::cli {

int cmd_partition(const PartitionArgs& args) {
  auto shapes = parse_shapes(args.common.shapes);
  if (!shapes.ok()) return report(shapes.status());
  // The session open_session would make, plus always_partition: the plan skips the partitioner
  // for a plain named backend, and this command must report that case too.
  auto graph = load(args.common.model);
  if (!graph.ok()) return report(graph.status());
  runtime::SessionOptions options;
  options.backend = args.common.backend;
  options.threads = args.common.threads;
  options.optimize = !args.common.no_optimize;
  options.outputs = args.common.outputs;
  options.partition.prefer = args.common.prefer;
  options.partition.deny = args.common.deny;
  options.partition.require_full_offload = args.common.require_full_offload;
  options.partition.device_profile = args.common.device_profile;
  options.partition.always_partition = true;
  for (const std::string& pin : args.common.pins) {
    const size_t eq = pin.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == pin.size())
      return report(invalid_argument("--pin '" + pin + "' must look like NODE_OR_OPTYPE=BACKEND"));
    options.partition.pins[pin.substr(0, eq)] = pin.substr(eq + 1);
  }
  options.tile_rows = args.common.tile_rows;
  auto session = runtime::Session::create(std::move(*graph), options);
  if (!session.ok()) return report(session.status());
  auto plan = (*session)->prepare((*session)->default_input_dims(*shapes));
  if (!plan.ok()) return report(plan.status());
  const partition::PartitionResult* result = (*plan)->partition_report.get();
  if (!result) return report(internal_error("the plan has no partition report"));
  const std::string json = partition::partition_report_json(*result, args.common.model);
  if (!args.report.empty()) {
    std::ofstream f(args.report);
    if (!(f << json) || !f.flush()) return report(unavailable("cannot write '" + args.report + "'"));
  }
  if (args.common.json) {
    std::fputs(json.c_str(), stdout);
    return 0;
  }
  std::printf("model %s\n%s", args.common.model.c_str(), partition::partition_summary(*result).c_str());
  if (!args.report.empty()) std::printf("report written to %s\n", args.report.c_str());
  return 0;
}

}  // namespace nfuse::cli
