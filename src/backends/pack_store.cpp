#include "backends/pack_store.h"

#include <chrono>
#include <utility>

#include "kernels/cpu_features.h"

namespace nfuse::backends {

bool PackStore::get(const std::string& key, const std::string& weight, size_t floats, PackedFloats* out,
                    const std::function<void(float*)>& fill, bool weight_read_too) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.packed.size() == floats) {
      *out = it->second.packed;
      ++hits_;
      return true;
    }
  }
  if (base_) {
    PackedFloats shared;
    bool found = false;
    {
      std::lock_guard<std::mutex> lock(base_->mutex_);
      auto it = base_->entries_.find(key);
      found = it != base_->entries_.end() && it->second.packed.size() == floats;
      if (found) {
        shared = it->second.packed;
        ++base_->hits_;
      }
    }
    if (found) {
      std::lock_guard<std::mutex> lock(mutex_);
      *out = std::move(shared);
      ++hits_;
      usage_.served.insert(key);
      return true;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  PackedFloats packed;
  if (!packed.resize(floats)) return false;
  fill(packed.data());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (base_) {
    std::lock_guard<std::mutex> lock(base_->mutex_);
    ++base_->packed_;
    base_->packed_ms_ += ms;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  ++packed_;
  ++usage_.packed;
  packed_ms_ += ms;
  if (recording_) entries_[key] = Entry{key, weight, packed, weight_read_too};
  *out = std::move(packed);
  return true;
}

void PackStore::add(const std::string& key, PackedFloats packed) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key] = Entry{key, {}, std::move(packed)};
}

std::vector<PackStore::Entry> PackStore::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Entry> out;
  if (base_) {  // a view: its base's buffers (and any added to the view)
    std::map<std::string, Entry> merged = base_->entries_map();
    for (const auto& [key, entry] : entries_) merged[key] = entry;
    for (const auto& [key, entry] : merged) out.push_back(entry);
    return out;
  }
  for (const auto& [key, entry] : entries_) out.push_back(entry);
  return out;
}

size_t PackStore::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
}

std::map<std::string, PackStore::Entry> PackStore::entries_map() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return entries_;
}

PackStore::Usage PackStore::take_usage() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(usage_, Usage{});
}

size_t PackStore::packed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return packed_;
}

double PackStore::packed_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return packed_ms_;
}

std::string pack_key(const char* family, const ir::Value& weight, std::initializer_list<uint64_t> params) {
  std::string key = std::string(family) + "|" + weight.name + "|" + kernels::isa_name(kernels::selected_isa()) + "|";
  for (uint64_t p : params) key += std::to_string(p) + ",";
  return key;
}

bool pack_weights(PackStore* store, const ir::Value& weight, const std::function<std::string()>& key, size_t floats,
                  PackedFloats* out, const std::function<void(float*)>& fill, bool weight_read_too) {
  if (store) return store->get(key(), weight.name, floats, out, fill, weight_read_too);
  if (!out->resize(floats)) return false;
  fill(out->data());
  return true;
}

}  // namespace nfuse::backends
