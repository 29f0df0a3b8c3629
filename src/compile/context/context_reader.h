// Reads and validates a context binary. Every byte is untrusted: the prefix and the header are
// checked before anything is sized from them, every offset and size against the file, every
// FlatBuffer by its verifier, every section by its checksum. Errors are typed:
// kCorruptBinary names the section and the check, kVersionMismatch both versions.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "compile/context/context_format.h"
#include "compile/context/context_info.h"
#include "compile/plan.h"
#include "ir/graph.h"
#include "nfuse/status.h"

namespace nfuse::context {

// The prefix and header of the binary whose first bytes are `data` (`available` of them: the
// whole file, or at least the prefix and the header) and whose size on disk is `file_size`.
Result<ContextInfo> read_header(const uint8_t* data, size_t available, uint64_t file_size);
// The same from a file, reading the prefix and the header only (what `nfuse check` needs).
Result<ContextInfo> read_header_file(const std::string& path);

// Checks every section's checksum against the whole file's bytes (large binaries on several
// threads); kCorruptBinary naming the lowest section that fails.
Status verify_sections(const ContextInfo& info, const uint8_t* file);
// The same for the sections `which` (indices into info.sections, ascending).
Status verify_sections(const ContextInfo& info, const uint8_t* file, const std::vector<uint32_t>& which);
// When a session's load checks each section (indices ascending in each list):
// - at_load: the graph and the tensors (shapes, sizes and all the planner reads come from them),
//   and the packed twins too when they are fewer than kBesideLoadMinBytes;
// - beside_load: the packed twins, which only kernels read: on a thread of their own while the
//   caller creates its session, awaited before any plan is handed out;
// - when_read: the canonical weights that only packing reads (pack_sources()).
struct CheckSchedule {
  std::vector<uint32_t> at_load, beside_load, when_read;
};
// Below this many bytes of packed twins a thread's start costs more than the check it would take
// off the caller's path (checking reads 12-17 GB/s on one core; a thread starts in 30-60 us).
inline constexpr uint64_t kBesideLoadMinBytes = uint64_t{1} << 20;
CheckSchedule check_schedule(const ContextInfo& info);

// The checksums of the sections `which` (indices into info.sections, ascending), checked by
// every thread that calls work(): each takes the next unchecked section until none is left.
// result(), once every work() call has returned, is kCorruptBinary naming the lowest section
// that failed. `info` and `file` must outlive it.
class SectionCheck {
 public:
  SectionCheck(const ContextInfo& info, const uint8_t* file, std::vector<uint32_t> which);
  void work() noexcept;
  Status result() const;
  uint64_t bytes() const;  // of the sections to check
  const std::vector<uint32_t>& sections() const { return which_; }

 private:
  const ContextInfo& info_;
  const uint8_t* file_;
  std::vector<uint32_t> which_;
  std::vector<Status> failures_;  // each index written by the one thread that checked it
  std::atomic<size_t> next_{0};
  std::atomic<size_t> first_bad_;
};

// "graph", "tensor", "packed weights".
const char* section_kind_name(Section::Kind kind);
// The tensor sections that only packing reads, as the packs name them (ContextInfo::Packed::
// source), ascending and distinct.
std::vector<uint32_t> pack_sources(const ContextInfo& info);

// The graph of a validated binary whose bytes stay valid while `keepalive` lives: constants
// are tensors borrowed from the file's sections (no copy), holding `keepalive`.
// `placements` and `layouts`, when given, receive the graph's stored placements and layouts
// (pointers into it).
Result<std::unique_ptr<ir::Graph>> read_graph(const ContextInfo& info, const uint8_t* file,
                                              std::shared_ptr<const void> keepalive,
                                              std::vector<compile::StoredPlacement>* placements = nullptr,
                                              std::vector<compile::StoredLayout>* layouts = nullptr);

}  // namespace nfuse::context
