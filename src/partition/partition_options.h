// What a user may say about where nodes run: the options of `--backend auto` (the cost-model
// partitioner) and the pins and denials that also apply when one backend is named.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace nfuse::partition {

struct PartitionOptions {
  // Backends in order of preference ("fusion", "cpu"); a node runs on the first that supports
  // it and pays, the last one is the fallback. Empty: the default order for `auto`.
  std::vector<std::string> prefer;
  // NODE_NAME or OP_TYPE -> backend, obeyed whatever the cost (a node name wins over its op type).
  std::map<std::string, std::string> pins;
  // Op types never given to a preferred backend: they run on the fallback.
  std::vector<std::string> deny;
  // Fail, listing every node that would not run on the first preferred backend.
  bool require_full_offload = false;
  // Device profiles (`nfuse device-profile` JSON); empty: the built-in defaults for this machine.
  std::string device_profile;
  // Run the partitioner (and keep its report in the plan) even for one named backend without
  // pins or denials: what `nfuse partition` asks for.
  bool always_partition = false;
};

}  // namespace nfuse::partition
