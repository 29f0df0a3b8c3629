// Pad's modes and the index map every Pad kernel shares (ref and cpu alike), so both read the
// same input element for every output element.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace nfuse::ops {

enum class PadMode { kConstant, kReflect, kEdge };

// The mode named by Pad's `mode` attribute; nullopt for others (wrap).
inline std::optional<PadMode> pad_mode_of(const std::string& name) {
  if (name == "constant") return PadMode::kConstant;
  if (name == "reflect") return PadMode::kReflect;
  if (name == "edge") return PadMode::kEdge;
  return std::nullopt;
}

// Maps an input index i (output index minus the leading pad) into [0, n) for edge (clamp) and
// reflect (mirror without repeating the border, periodically as numpy does for pads wider than
// the dim); false for constant mode outside the range, where the pad value is written.
inline bool map_pad_index(int64_t& i, int64_t n, PadMode mode) {
  if (i >= 0 && i < n) return true;
  switch (mode) {
    case PadMode::kConstant: return false;
    case PadMode::kEdge: i = i < 0 ? 0 : n - 1; return true;
    case PadMode::kReflect: {
      if (n == 1) {
        i = 0;
        return true;
      }
      const int64_t period = 2 * (n - 1);
      int64_t m = i % period;
      if (m < 0) m += period;
      i = m < n ? m : period - m;
      return true;
    }
  }
  return false;
}

}  // namespace nfuse::ops
