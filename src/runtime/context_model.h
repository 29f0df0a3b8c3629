// A context binary opened for sessions: mapped read-only (or a caller's buffer borrowed),
// validated once, judged against this device, and able to hand each session its own graph
// whose constants are read in place from the shared mapping (N sessions, one copy of the
// weights in memory). The compile side: a session's optimized graph and plan options saved.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/pack_store.h"
#include "compile/context/compatibility.h"
#include "compile/context/context_info.h"
#include "core/mapped_file.h"
#include "ir/graph.h"
#include "nfuse/status.h"
#include "runtime/session.h"

namespace nfuse::runtime {

struct ContextLoadOptions {
  context::CompatMode compat = context::CompatMode::kPermissive;
  // Check every section's checksum before it is read (a flipped bit in a weight becomes
  // kCorruptBinary, not a wrong answer): at load, except the canonical weights whose packed twins
  // sessions read instead, which are checked before anything else reads them. Off only for
  // binaries whose integrity the caller has already checked.
  bool verify_sections = true;
  // When set, the binary must have been compiled from a model with this SHA-256 (kModelMismatch).
  std::string expected_source_sha256;
};

class ContextModel {
 public:
  static Result<std::shared_ptr<const ContextModel>> open_file(const std::string& path,
                                                               const ContextLoadOptions& options);
  // Bytes the caller keeps alive (and unchanged) while `keepalive` lives, 64-byte aligned.
  static Result<std::shared_ptr<const ContextModel>> open_buffer(const void* data, size_t size,
                                                                 std::shared_ptr<const void> keepalive,
                                                                 const ContextLoadOptions& options);

  const context::ContextInfo& info() const { return info_; }
  const context::Verdict& verdict() const { return verdict_; }
  // A graph of its own for a new session, its constants borrowed from the binary.
  Result<std::unique_ptr<ir::Graph>> graph() const;
  // The prepacked weights store every session of this binary shares (hits and repacks counted).
  const backends::PackStore& packs() const { return *packs_; }
  // `base` with the binary's plan-shaping options (backend, preferences, pins, denials, tile
  // rows, device profile) and its graph marked as already optimized; threads stay base's.
  SessionOptions session_options(SessionOptions base) const;
  // A new copy of the graph with the session options for it: session_options(base) plus the
  // placements the binary stores for this copy's nodes (a plan of a stored signature and thread
  // count is not partitioned again). Its weights may include canonical copies not yet checked:
  // hand it to Session::create with these options (their `deferred` checks them before anything
  // reads them), or use graph() for any other purpose.
  Result<std::unique_ptr<ir::Graph>> graph(SessionOptions* options) const;

 private:
  ContextModel() = default;
  static Result<std::shared_ptr<const ContextModel>> open(const uint8_t* data, size_t size,
                                                          std::shared_ptr<const void> keepalive,
                                                          const ContextLoadOptions& options,
                                                          const MappedFile* file = nullptr);
  std::shared_ptr<const void> keepalive_;
  const uint8_t* data_ = nullptr;
  context::ContextInfo info_;
  context::Verdict verdict_;
  // The binary's prepacked weights, read in place; shared by every session of this binary
  // (each through a view of its own).
  std::shared_ptr<backends::PackStore> packs_;
  // The canonical weights of those packs, checked when something may read them; null when all
  // were checked at load.
  std::shared_ptr<const DeferredWeights> deferred_;
};

// True when the file at `path` starts with the context binary magic (false when unreadable).
bool is_context_file(const std::string& path);

// Saves `session`'s optimized graph and plan options as a context binary at `path`, with the
// input-shape signatures of its plans; `source_name`/`source_sha256` identify the model it came
// from.
Status save_context(const Session& session, const std::string& source_name, const std::string& source_sha256,
                    const std::string& path);

}  // namespace nfuse::runtime
