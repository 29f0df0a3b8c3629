// What a context binary's header says, decoded: the compatibility facts `nfuse check` judges,
// the plan options a session of the binary uses, and the section table.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace nfuse::context {

// The placement and planning options the binary was compiled with (runtime::SessionOptions'
// plan-shaping fields).
struct ContextPlanOptions {
  std::string backend = "auto";
  std::vector<std::string> prefer;
  std::map<std::string, std::string> pins;  // node name or op type -> backend
  std::vector<std::string> deny;
  int threads = 1;  // a hint: a session may run with another count
  int tile_rows = 0;
  std::string device_profile;
};

using ShapeSignature = std::map<std::string, std::vector<int64_t>>;

struct Section {
  enum class Kind : uint8_t { kGraph = 0, kTensor = 1, kPacked = 2 };
  Kind kind = Kind::kTensor;
  uint64_t offset = 0;
  uint64_t size = 0;
  uint64_t checksum = 0;
};

struct ContextInfo {
  uint32_t format_version = 0;
  uint64_t file_size = 0;
  std::string nfuse_version;
  std::string build_id;
  std::string arch;
  std::vector<std::string> required_isa;
  std::string planned_isa;
  std::vector<std::string> planned_features;
  uint64_t l1d_bytes = 0, l2_bytes = 0, l3_bytes = 0;
  std::vector<std::string> backends;  // every backend the options name
  std::string source_name;
  std::string source_sha256;
  std::vector<ShapeSignature> signatures;
  ContextPlanOptions options;
  std::vector<Section> sections;  // [0]: the graph
  struct Packed {
    std::string key;  // backends::pack_key
    uint64_t floats = 0;
    uint32_t section = 0;
    // The tensor section of the canonical weight it was packed from, when nothing but packing
    // reads that section (its checksum is checked when it is read); -1 otherwise.
    int32_t source = -1;
  };
  std::vector<Packed> packs;
  double pack_ms = 0.0;
};

// A prepacked buffer for the writer (the backends' PackStore entries).
struct PackedBlob {
  std::string key;
  std::string weight;  // the top-level graph value packed (PackStore::Entry::weight)
  const float* data = nullptr;
  size_t floats = 0;
  bool weight_read_too = false;  // the packing op also reads the weight: never a "when read" source
};

}  // namespace nfuse::context
