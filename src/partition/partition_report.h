// The partitioner's result as `nfuse partition --report` writes it (JSON) and prints it (a short
// human summary). Keys: model, prefer, fallback, threads, device_profile, nodes, partitions,
// transfers, est_total_us, fallback_ratio_nodes, fallback_ratio_time, warnings.
#pragma once

#include <string>

#include "partition/partitioner.h"

namespace nfuse::partition {

// The report as JSON text (indented); `model` is recorded as given.
std::string partition_report_json(const PartitionResult& result, const std::string& model);

// A few lines: one per partition (backend, node count, first..last node, estimate), the
// transfers, the fallback ratios and the warnings.
std::string partition_summary(const PartitionResult& result);

}  // namespace nfuse::partition
