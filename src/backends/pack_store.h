// Prepacked weights by key, shared by the plans of one model: what `nfuse compile` records from
// the backends' packing, and what a context binary hands back so its sessions read packed
// weights in place instead of packing them again. A key names the weight and every parameter of
// its layout (kernel family, ISA, tile sizes), so a binary packed for another CPU simply misses
// and the backend packs from the kept canonical weights.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "core/aligned_storage.h"
#include "ir/graph.h"

namespace nfuse::backends {

class PackStore {
 public:
  // A recording store keeps every buffer packed through it (for the binary).
  explicit PackStore(bool recording) : recording_(recording) {}
  // One session's view of a context binary's store (one view per session: take_usage() reports
  // the plans of whoever shares it): serves `base`'s buffers, packs what base lacks without
  // keeping it, and counts its hits and packing in `base` too (a binary's totals).
  explicit PackStore(std::shared_ptr<PackStore> base) : recording_(false), base_(std::move(base)) {}

  // *out = the stored buffer under `key` when it holds exactly `floats`, else one `fill` packs
  // from the graph value `weight` (and a recording store keeps). `weight_read_too`: the op also
  // reads the weight itself, so a context binary must check it at load like any other (never
  // "when read"). False when memory runs out.
  bool get(const std::string& key, const std::string& weight, size_t floats, PackedFloats* out,
           const std::function<void(float*)>& fill, bool weight_read_too = false);
  // Adds a buffer a context binary brought.
  void add(const std::string& key, PackedFloats packed);

  struct Entry {
    std::string key;
    std::string weight;  // the graph value packed (a recording store's entries; else empty)
    PackedFloats packed;
    bool weight_read_too = false;  // the packing op also reads `weight` itself
  };
  std::vector<Entry> entries() const;  // sorted by key (a view's: its base's too)
  size_t hits() const;                 // buffers served from the store
  size_t packed() const;               // buffers packed through the store (misses)
  double packed_ms() const;            // time spent packing those
  // What the plans built since the last call took: keys a view served from its base, buffers
  // packed through the store. Resets both.
  struct Usage {
    std::set<std::string> served;
    size_t packed = 0;
  };
  Usage take_usage();

 private:
  std::map<std::string, Entry> entries_map() const;

  mutable std::mutex mutex_;
  bool recording_;
  std::shared_ptr<PackStore> base_;
  Usage usage_;
  std::map<std::string, Entry> entries_;
  size_t hits_ = 0, packed_ = 0;
  double packed_ms_ = 0.0;
};

// "family|weight value|isa|p0,p1,...": every parameter the packed layout depends on goes in
// `params` (tile sizes, groups, scale bits), the kernel ISA is added here.
std::string pack_key(const char* family, const ir::Value& weight, std::initializer_list<uint64_t> params);

// Packs `weight` into *out through `store` when there is one, else directly. The key is only
// built when there is a store.
bool pack_weights(PackStore* store, const ir::Value& weight, const std::function<std::string()>& key, size_t floats,
                  PackedFloats* out, const std::function<void(float*)>& fill, bool weight_read_too = false);

}  // namespace nfuse::backends
