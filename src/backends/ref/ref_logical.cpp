// Reference kernels for comparisons, boolean logic and Where.
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_elementwise_util.h"
#include "ops/elementwise_util.h"

namespace nfuse::backends::ref {
namespace {

enum class Cmp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kAnd, kOr, kXor };

template <Cmp K, typename C>
bool compare(C x, C y) {
  switch (K) {
    case Cmp::kEqual: return x == y;
    case Cmp::kLess: return x < y;
    case Cmp::kGreater: return x > y;
    case Cmp::kLessOrEqual: return x <= y;
    case Cmp::kGreaterOrEqual: return x >= y;
    case Cmp::kAnd: return x && y;
    case Cmp::kOr: return x || y;
    case Cmp::kXor: return x != y;
  }
  return false;
}

template <Cmp K>
Status compare_kernel(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& y = a.in(1);
  ir::Tensor& z = a.out(0);
  if (x.dtype() != y.dtype()) return a.error("inputs differ in dtype");
  std::vector<int64_t> y_dims = y.dims();
  if (ops::uses_legacy_broadcast(a.node)) {
    NFUSE_ASSIGN_OR_RETURN(y_dims, ops::legacy_broadcast_dims(a.node, x.dims(), y.dims()));
  }
  if (!broadcasts_to(x.dims(), z.dims()) || !broadcasts_to(y_dims, z.dims())) {
    return a.error("inputs do not broadcast to the output shape");
  }
  constexpr bool kLogic = K == Cmp::kAnd || K == Cmp::kOr || K == Cmp::kXor;
  bool done = false;
  ir::visit_dtype(x.dtype(), [&]<typename T>() {
    if constexpr (kLogic == std::is_same_v<T, bool> || K == Cmp::kEqual) {
      const T* xs = x.data<T>();
      const T* ys = y.data<T>();
      bool* out = z.data<bool>();
      for_each_broadcast(z.dims(), {x.dims(), y_dims}, [&](int64_t i, const std::vector<int64_t>& off) {
        out[i] = compare<K>(load(xs[off[0]]), load(ys[off[1]]));
      });
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, x.dtype());
}

Status not_kernel(KernelArgs& a) {
  if (a.in(0).dtype() != ir::DType::kBool) return dtype_error(a, a.in(0).dtype());
  const bool* in = a.in(0).data<bool>();
  bool* out = a.out(0).data<bool>();
  for (int64_t i = 0; i < a.in(0).numel(); ++i) out[i] = !in[i];
  return ok_status();
}

// Element bytes are copied as they are, so Where serves every dtype alike.
Status where_kernel(KernelArgs& a) {
  const ir::Tensor& cond = a.in(0);
  const ir::Tensor& x = a.in(1);
  const ir::Tensor& y = a.in(2);
  ir::Tensor& z = a.out(0);
  if (cond.dtype() != ir::DType::kBool) return dtype_error(a, cond.dtype());
  if (x.dtype() != z.dtype() || y.dtype() != z.dtype()) return a.error("X and Y must have the output dtype");
  for (const ir::Tensor* t : {&cond, &x, &y}) {
    if (!broadcasts_to(t->dims(), z.dims())) return a.error("inputs do not broadcast to the output shape");
  }
  const size_t size = ir::dtype_size(z.dtype());
  const bool* c = cond.data<bool>();
  const auto* xs = static_cast<const unsigned char*>(x.raw());
  const auto* ys = static_cast<const unsigned char*>(y.raw());
  auto* out = static_cast<unsigned char*>(z.raw());
  for_each_broadcast(z.dims(), {cond.dims(), x.dims(), y.dims()}, [&](int64_t i, const std::vector<int64_t>& off) {
    const unsigned char* src = c[off[0]] ? xs + off[1] * static_cast<int64_t>(size) : ys + off[2] * static_cast<int64_t>(size);
    std::memcpy(out + i * static_cast<int64_t>(size), src, size);
  });
  return ok_status();
}

}  // namespace

void register_logical_kernels(KernelRegistry& registry) {
  registry.add("Equal", compare_kernel<Cmp::kEqual>);
  registry.add("Less", compare_kernel<Cmp::kLess>);
  registry.add("Greater", compare_kernel<Cmp::kGreater>);
  registry.add("LessOrEqual", compare_kernel<Cmp::kLessOrEqual>);
  registry.add("GreaterOrEqual", compare_kernel<Cmp::kGreaterOrEqual>);
  registry.add("And", compare_kernel<Cmp::kAnd>);
  registry.add("Or", compare_kernel<Cmp::kOr>);
  registry.add("Xor", compare_kernel<Cmp::kXor>);
  registry.add("Not", not_kernel);
  registry.add("Where", where_kernel);
}

}  // namespace nfuse::backends::ref
