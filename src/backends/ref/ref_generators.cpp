// Constant, ConstantOfShape, Range, EyeLike and OneHot.
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"
#include "ops/tensor_params.h"

namespace nfuse::backends::ref {
namespace {

Status constant(KernelArgs& a) {
  auto t = ops::constant_value(a.node);
  if (!t.ok()) return t.status();
  if (t->dims() != a.out(0).dims() || t->dtype() != a.out(0).dtype()) return a.error("output type mismatch");
  if (t->bytes()) std::memcpy(a.out(0).raw(), t->raw(), t->bytes());
  return ok_status();
}

Status constant_of_shape(KernelArgs& a) {
  ir::Tensor& y = a.out(0);
  const ir::Tensor* v = a.attrs().get_tensor("value");
  if (!v) {  // the default value: 0.0f (outputs arrive with unspecified contents)
    if (y.bytes()) std::memset(y.raw(), 0, y.bytes());
    return ok_status();
  }
  if (v->dtype() != y.dtype() || v->numel() != 1) return a.error("'value' must be one element of the output dtype");
  const size_t esize = ir::dtype_size(y.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) copy_elem(y.raw(), i, v->raw(), 0, esize);
  return ok_status();
}

Status range(KernelArgs& a) {
  ir::Tensor& y = a.out(0);
  const ir::DType t = y.dtype();
  if (ir::dtype_is_float(t)) {
    const double start = a.in(0).get_double(0), delta = a.in(2).get_double(0);
    for (int64_t i = 0; i < y.numel(); ++i)
      ir::store_from_double(t, y.raw(), i, start + static_cast<double>(i) * delta);
  } else {
    // Integer ranges stay exact beyond 2^53: no trip through double.
    const int64_t start = a.in(0).get_int(0), delta = a.in(2).get_int(0);
    ir::visit_dtype(t, [&]<typename T>() {
      if constexpr (std::is_integral_v<T>) {
        T* out = y.data<T>();
        for (int64_t i = 0; i < y.numel(); ++i) out[i] = static_cast<T>(start + i * delta);
      }
    });
  }
  return ok_status();
}

Status eye_like(KernelArgs& a) {
  ir::Tensor& y = a.out(0);
  if (y.rank() != 2) return a.error("input must be 2-D");
  const int64_t k = a.attrs().get_int("k", 0);
  if (y.bytes()) std::memset(y.raw(), 0, y.bytes());
  for (int64_t i = 0; i < y.dim(0); ++i) {
    // Column i + k, when it exists; the rest is zero.
    if (k >= -i && k < y.dim(1) - i) ir::store_from_double(y.dtype(), y.raw(), i * y.dim(1) + i + k, 1.0);
  }
  return ok_status();
}

Status one_hot(KernelArgs& a) {
  const ir::Tensor& idx = a.in(0);
  const ir::Tensor& values = a.in(2);
  ir::Tensor& y = a.out(0);
  if (values.numel() != 2 || values.dtype() != y.dtype()) return a.error("values must hold [off, on]");
  const int64_t axis_attr = a.attrs().get_int("axis", -1);
  const int axis = static_cast<int>(axis_attr < 0 ? axis_attr + y.rank() : axis_attr);
  if (y.rank() != idx.rank() + 1 || axis < 0 || axis >= y.rank()) return a.error("bad output rank or axis");
  const int64_t depth = y.dim(axis);
  int64_t inner = 1;
  for (int d = axis; d < idx.rank(); ++d) inner *= idx.dim(d);
  const size_t esize = ir::dtype_size(y.dtype());
  for (int64_t i = 0; i < y.numel(); ++i) copy_elem(y.raw(), i, values.raw(), 0, esize);
  for (int64_t p = 0; p < idx.numel(); ++p) {
    // Indices may be any numeric type; ONNX casts them to integers.
    const double raw = idx.get_double(p);
    if (!(raw > -static_cast<double>(depth) - 1 && raw < static_cast<double>(depth))) continue;
    int64_t c = static_cast<int64_t>(raw);
    if (!normalize_index(c, depth)) continue;
    const int64_t o = p / inner, in = p % inner;
    copy_elem(y.raw(), (o * depth + c) * inner + in, values.raw(), 1, esize);
  }
  return ok_status();
}

}  // namespace

void register_generators_kernels(KernelRegistry& registry) {
  registry.add("Constant", constant);
  registry.add("ConstantOfShape", constant_of_shape);
  registry.add("Range", range);
  registry.add("EyeLike", eye_like);
  registry.add("OneHot", one_hot);
}

}  // namespace nfuse::backends::ref
