#include "backends/pack_store.h"

#include <chrono>

#include "kernels/cpu_features.h"

namespace nfuse::backends {

bool PackStore::get(const std::string& key, size_t floats, PackedFloats* out, const std::function<void(float*)>& fill) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = entries_.find(key);
    if (it != entries_.end() && it->second.size() == floats) {
      *out = it->second;
      ++hits_;
      return true;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  PackedFloats packed;
  if (!packed.resize(floats)) return false;
  fill(packed.data());
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(mutex_);
  ++packed_;
  packed_ms_ += ms;
  if (recording_) entries_[key] = packed;
  *out = std::move(packed);
  return true;
}

void PackStore::add(const std::string& key, PackedFloats packed) {
  std::lock_guard<std::mutex> lock(mutex_);
  entries_[key] = std::move(packed);
}

std::vector<PackStore::Entry> PackStore::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<Entry> out;
  for (const auto& [key, packed] : entries_) out.push_back({key, packed});
  return out;
}

size_t PackStore::hits() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return hits_;
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

bool pack_weights(PackStore* store, const std::function<std::string()>& key, size_t floats, PackedFloats* out,
                  const std::function<void(float*)>& fill) {
  if (store) return store->get(key(), floats, out, fill);
  if (!out->resize(floats)) return false;
  fill(out->data());
  return true;
}

}  // namespace nfuse::backends
