#include "backends/ref/ref_nn_util.h"

#include <algorithm>

namespace nfuse::backends::ref {

std::vector<int64_t> dynamic_quantized_centered(const float* x, size_t n, DynamicQuantParams* q) {
  *q = dynamic_quant_params_of(x, n);
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = (q->scale != 0.0f ? quantize_value<uint8_t>(x[i], q->scale, q->zero_point) : 0) - q->zero_point;
  return v;
}

std::vector<double> to_doubles(const ir::Tensor& t) {
  std::vector<double> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_double(i);
  return v;
}

std::vector<int64_t> to_int64s(const ir::Tensor& t) {
  std::vector<int64_t> v(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) v[static_cast<size_t>(i)] = t.get_int(i);
  return v;
}

void from_doubles(const std::vector<double>& v, ir::Tensor& t) {
  const int64_t n = std::min<int64_t>(t.numel(), static_cast<int64_t>(v.size()));
  for (int64_t i = 0; i < n; ++i) ir::store_from_double(t.dtype(), t.raw(), i, v[static_cast<size_t>(i)]);
}

std::vector<int64_t> all_indices(const std::vector<int64_t>& dims) {
  const size_t rank = dims.size();
  const int64_t total = product(dims);
  std::vector<int64_t> out(static_cast<size_t>(total) * rank);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t i = 0; i < total; ++i) {
    for (size_t d = 0; d < rank; ++d) out[static_cast<size_t>(i) * rank + d] = idx[d];
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < dims[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

int64_t product(const std::vector<int64_t>& dims) {
  int64_t p = 1;
  for (int64_t d : dims) p *= d;
  return p;
}

}  // namespace nfuse::backends::ref
