// Writes a context binary: the optimized graph, the plan options and the device facts in
// `info`, and every constant tensor's bytes in an aligned raw section.
#pragma once

#include <string>

#include "compile/context/context_info.h"
#include "compile/plan.h"
#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::context {

// `info` gives everything but the format version, file size and sections, which the writer
// fills; `placements` are the partitioner's decisions for the graph (its nodes and values), `layouts` the
// plans' strip heights and arena offsets. The file appears whole or
// not at all (written beside, then renamed). kUnsupported when the graph holds what the format cannot keep;
// kUnavailable when the file cannot be written.
Status write_context(const ir::Graph& graph, const ContextInfo& info, const std::string& path,
                     const std::vector<PackedBlob>& packs = {},
                     const std::vector<compile::StoredPlacement>& placements = {},
                     const std::vector<compile::StoredLayout>& layouts = {});

// The binary as bytes in memory (the writer's layout), for tests and nfuse_model_load_memory.
Result<std::string> context_bytes(const ir::Graph& graph, const ContextInfo& info,
                                  const std::vector<PackedBlob>& packs = {},
                                  const std::vector<compile::StoredPlacement>& placements = {},
                                  const std::vector<compile::StoredLayout>& layouts = {});

}  // namespace nfuse::context
