#include <algorithm>

#include "backends/backend.h"

namespace nfuse::backends {

const char* support_reason_name(SupportReason reason) {
  switch (reason) {
    case SupportReason::kNone: return "";
    case SupportReason::kUnsupportedOp: return "unsupported op";
    case SupportReason::kDtype: return "dtype";
    case SupportReason::kDynamicShape: return "dynamic shape";
    case SupportReason::kRank: return "rank != 4";
    case SupportReason::kCost: return "cost";
    case SupportReason::kPinned: return "pinned";
    case SupportReason::kDenied: return "denied";
  }
  return "";
}

std::string Support::text() const {
  if (kind != SupportKind::kNo) return detail;
  const std::string name = support_reason_name(reason);
  return name.empty() ? detail : name + ": " + detail;
}

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

const BackendTraits& BackendRegistry::traits_of(const std::string& name) const {
  std::lock_guard<std::mutex> lock(traits_mutex_);
  auto it = traits_.find(name);
  if (it == traits_.end()) it = traits_.emplace(name, factories_.at(name)()->traits()).first;
  return it->second;
}

Result<BackendTraits> BackendRegistry::traits(const std::string& name) const {
  if (!factories_.count(name)) return create(name).status();  // the kNotFound listing the known names
  return traits_of(name);
}

std::string BackendRegistry::first_with(bool BackendTraits::*flag) const {
  for (const std::string& name : names())
    if (traits_of(name).*flag) return name;
  return "";
}

std::string BackendRegistry::reference() const { return first_with(&BackendTraits::is_reference); }

std::string BackendRegistry::general_fallback() const { return first_with(&BackendTraits::is_general_fallback); }

std::vector<std::string> BackendRegistry::auto_order() const {
  std::vector<std::string> out;
  for (const std::string& name : names())
    if (traits_of(name).auto_priority > 0) out.push_back(name);
  std::stable_sort(out.begin(), out.end(), [this](const std::string& a, const std::string& b) {
    return traits_of(a).auto_priority > traits_of(b).auto_priority;
  });
  return out;
}

}  // namespace nfuse::backends
