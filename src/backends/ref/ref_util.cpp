#include "backends/ref/ref_util.h"

namespace nfuse::backends::ref {

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

bool broadcasts_to(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  if (in.size() > out.size()) return false;
  const size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1 && in[i] != out[offset + i]) return false;
  return true;
}

std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  std::vector<int64_t> result(out.size(), 0);
  const std::vector<int64_t> s = strides_of(in);
  const size_t offset = out.size() - in.size();
  for (size_t i = 0; i < in.size(); ++i) result[offset + i] = in[i] == 1 ? 0 : s[i];
  return result;
}

}  // namespace nfuse::backends::ref
