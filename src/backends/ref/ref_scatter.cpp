// ScatterElements, Scatter (its deprecated alias) and ScatterND: the output starts as a copy of
// data; updates then replace or reduce into the addressed elements, in index order.
#include <algorithm>
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"

namespace nfuse::backends::ref {
namespace {

enum class Reduction { kNone, kAdd, kMul, kMax, kMin };

Reduction reduction_of(const ir::Attributes& attrs) {
  const std::string r = attrs.get_string("reduction", "none");
  if (r == "add") return Reduction::kAdd;
  if (r == "mul") return Reduction::kMul;
  if (r == "max") return Reduction::kMax;
  if (r == "min") return Reduction::kMin;
  return Reduction::kNone;
}

// out[o] = reduce(out[o], upd[u]) for every dtype.
void apply(ir::DType t, void* out, int64_t o, const void* upd, int64_t u, Reduction r) {
  ir::visit_dtype(t, [&]<typename T>() {
    T* y = static_cast<T*>(out);
    const T* v = static_cast<const T*>(upd);
    using C = compute_t<T>;
    const C a = load(y[o]);
    const C b = load(v[u]);
    switch (r) {
      case Reduction::kNone: y[o] = v[u]; break;
      case Reduction::kAdd: y[o] = store<T>(static_cast<C>(a + b)); break;
      case Reduction::kMul: y[o] = store<T>(static_cast<C>(a * b)); break;
      case Reduction::kMax: y[o] = store<T>(std::max(a, b)); break;
      case Reduction::kMin: y[o] = store<T>(std::min(a, b)); break;
    }
  });
}

Status index_error(KernelArgs& a, int64_t i, int64_t dim) {
  return a.error("index " + std::to_string(i) + " is out of range for a dim of size " + std::to_string(dim));
}

Status scatter_elements(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& idx = a.in(1);
  const ir::Tensor& upd = a.in(2);
  ir::Tensor& y = a.out(0);
  if (x.bytes()) std::memcpy(y.raw(), x.raw(), x.bytes());
  const int64_t axis_attr = a.attrs().get_int("axis", 0);
  const size_t axis = static_cast<size_t>(axis_attr < 0 ? axis_attr + x.rank() : axis_attr);
  if (idx.dims() != upd.dims() || idx.rank() != x.rank()) return a.error("indices and updates must match");
  for (size_t d = 0; d < x.dims().size(); ++d) {
    if (d != axis && idx.dims()[d] > x.dims()[d]) return a.error("indices are larger than data outside the axis");
  }
  const Reduction r = reduction_of(a.attrs());
  const std::vector<int64_t> strides = strides_of(x.dims());
  Status status;
  for_each_index(idx.dims(), [&](const std::vector<int64_t>& i, int64_t linear) {
    if (!status.ok()) return;
    int64_t k = idx.get_int(linear);
    if (!normalize_index(k, x.dims()[axis])) {
      status = index_error(a, idx.get_int(linear), x.dims()[axis]);
      return;
    }
    int64_t dst = 0;
    for (size_t d = 0; d < i.size(); ++d) dst += (d == axis ? k : i[d]) * strides[d];
    apply(x.dtype(), y.raw(), dst, upd.raw(), linear, r);
  });
  return status;
}

Status scatter_nd(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& idx = a.in(1);
  const ir::Tensor& upd = a.in(2);
  ir::Tensor& y = a.out(0);
  if (x.bytes()) std::memcpy(y.raw(), x.raw(), x.bytes());
  const size_t q = idx.dims().size();
  if (q == 0) return a.error("indices must have rank >= 1");
  const size_t k = static_cast<size_t>(idx.dims()[q - 1]);
  if (k < 1 || k > x.dims().size()) return a.error("indices' last dim must be in [1, rank(data)]");
  int64_t slice = 1;
  for (size_t d = k; d < x.dims().size(); ++d) slice *= x.dims()[d];
  const int64_t tuples = q == 1 ? 1 : ir::shape_numel(std::vector<int64_t>(idx.dims().begin(), idx.dims().end() - 1));
  if (upd.numel() != tuples * slice) return a.error("updates do not match indices and data");
  const std::vector<int64_t> strides = strides_of(x.dims());
  const Reduction r = reduction_of(a.attrs());
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t dst = 0;
    for (size_t j = 0; j < k; ++j) {
      const int64_t raw = idx.get_int(t * static_cast<int64_t>(k) + static_cast<int64_t>(j));
      int64_t v = raw;
      if (!normalize_index(v, x.dims()[j])) return index_error(a, raw, x.dims()[j]);
      dst += v * strides[j];
    }
    for (int64_t e = 0; e < slice; ++e) apply(x.dtype(), y.raw(), dst + e, upd.raw(), t * slice + e, r);
  }
  return ok_status();
}

}  // namespace

void register_scatter_kernels(KernelRegistry& registry) {
  registry.add("ScatterElements", scatter_elements);
  registry.add("Scatter", scatter_elements);
  registry.add("ScatterND", scatter_nd);
}

}  // namespace nfuse::backends::ref
