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
  auto options = session_options(args.common);
  if (!options.ok()) return report(options.status());
  options->partition.always_partition = true;
  auto session = open_session(args.common, std::move(*options));  // an .nfc too: its stored placement
  if (!session.ok()) return report(session.status());
  auto plan = (*session)->prepare((*session)->default_input_dims(*shapes));
  if (!plan.ok()) return report(with_assumed(plan.status(), assumed_inputs((*session)->graph(), *shapes)));
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
