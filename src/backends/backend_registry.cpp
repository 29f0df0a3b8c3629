#include <algorithm>

#include "backends/backend.h"

namespace nfuse::backends {

BackendRegistry& BackendRegistry::global() {
  static BackendRegistry registry;
  return registry;
}

bool BackendRegistry::add(std::string name, BackendFactory factory) {
  factories_[std::move(name)] = factory;
  return true;
}

Result<std::unique_ptr<Backend>> BackendRegistry::create(const std::string& name) const {
  auto it = factories_.find(name);
  if (it == factories_.end()) {
    std::string known;
    for (const std::string& n : names()) known += (known.empty() ? "" : ", ") + n;
    return not_found("unknown backend '" + name + "' (known: " + known + ")");
  }
  return it->second();
}

std::vector<std::string> BackendRegistry::names() const {
  std::vector<std::string> out;
  for (const auto& [name, f] : factories_) out.push_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace nfuse::backends
