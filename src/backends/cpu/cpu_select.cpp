// Comparisons (Equal, Less, Greater, LessOrEqual, GreaterOrEqual on f32, f64, i64, i32, i8, u8,
// and Equal on bool), boolean logic (And, Or, Xor, Not) and Where (any dtype: its elements are
// copied as bytes of their size) on the cpu backend, with numpy broadcasting over any rank
// (cpu_broadcast.h): each output row is one loop over contiguous or broadcast operands. The
// results are exact, so they equal the reference kernels' bit for bit. Opset-1..6 broadcasts
// (the `axis` attribute) stay on the reference kernels.
#include <cstring>

#include "backends/cpu/cpu_broadcast.h"
#include "backends/cpu/cpu_op.h"
#include "ops/elementwise_util.h"

namespace nfuse::backends::cpu {
namespace {

enum class Cmp { kEqual, kLess, kGreater, kLessOrEqual, kGreaterOrEqual, kAnd, kOr, kXor };

template <Cmp K, typename T>
inline bool apply(T x, T y) {
  if constexpr (K == Cmp::kEqual) return x == y;
  if constexpr (K == Cmp::kLess) return x < y;
  if constexpr (K == Cmp::kGreater) return x > y;
  if constexpr (K == Cmp::kLessOrEqual) return x <= y;
  if constexpr (K == Cmp::kGreaterOrEqual) return x >= y;
  if constexpr (K == Cmp::kAnd) return x && y;
  if constexpr (K == Cmp::kOr) return x || y;
  if constexpr (K == Cmp::kXor) return x != y;
  return false;
}

// One row: z[i] = x[i * sx] op y[i * sy], steps 0 or 1, each case its own loop so that the
// contiguous ones vectorise.
template <Cmp K, typename T>
void compare_row(const T* x, size_t sx, const T* y, size_t sy, bool* z, size_t n) {
  if (sx == 1 && sy == 1) {
    for (size_t i = 0; i < n; ++i) z[i] = apply<K>(x[i], y[i]);
  } else if (sx == 1) {
    const T b = y[0];
    for (size_t i = 0; i < n; ++i) z[i] = apply<K>(x[i], b);
  } else if (sy == 1) {
    const T a = x[0];
    for (size_t i = 0; i < n; ++i) z[i] = apply<K>(a, y[i]);
  } else {
    const bool v = apply<K>(x[0], y[0]);
    for (size_t i = 0; i < n; ++i) z[i] = v;
  }
}

class CompareOp final : public CpuOp {
 public:
  using RowFn = void (*)(const void* x, size_t sx, const void* y, size_t sy, bool* z, size_t n);
  CompareOp(RowFn row, size_t elem) : row_(row), elem_(elem) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    const ir::Tensor& y = *t.inputs[1];
    ir::Tensor& z = *t.outputs[0];
    const std::array<const std::vector<int64_t>*, 3> dims{&x.dims(), &y.dims(), &z.dims()};
    if (!cached_.same(dims)) {
      if (!rows_.plan(z.dims(), {&x.dims(), &y.dims()})) return invalid_argument("inputs do not broadcast");
      cached_.set(dims);
    }
    const auto* xs = static_cast<const unsigned char*>(x.raw());
    const auto* ys = static_cast<const unsigned char*>(y.raw());
    bool* out = z.data<bool>();
    const size_t sx = rows_.step(0), sy = rows_.step(1), n = rows_.row_length();
    rows_.run(rc.pool, [&](size_t o, const std::array<size_t, 2>& off) {
      row_(xs + off[0] * elem_, sx, ys + off[1] * elem_, sy, out + o, n);
    });
    return ok_status();
  }

 private:
  RowFn row_;
  size_t elem_;
  BroadcastRows<2> rows_;
  DimsKey<3> cached_;
};

template <Cmp K, typename T>
void compare_row_erased(const void* x, size_t sx, const void* y, size_t sy, bool* z, size_t n) {
  compare_row<K, T>(static_cast<const T*>(x), sx, static_cast<const T*>(y), sy, z, n);
}

template <Cmp K>
CompareOp::RowFn row_for(ir::DType t) {
  constexpr bool kLogic = K == Cmp::kAnd || K == Cmp::kOr || K == Cmp::kXor;
  if (kLogic || t == ir::DType::kBool) {
    if (t == ir::DType::kBool && (kLogic || K == Cmp::kEqual)) return compare_row_erased<K, bool>;
    return nullptr;
  }
  switch (t) {
    case ir::DType::kF32: return compare_row_erased<K, float>;
    case ir::DType::kF64: return compare_row_erased<K, double>;
    case ir::DType::kI64: return compare_row_erased<K, int64_t>;
    case ir::DType::kI32: return compare_row_erased<K, int32_t>;
    case ir::DType::kI8: return compare_row_erased<K, int8_t>;
    case ir::DType::kU8: return compare_row_erased<K, uint8_t>;
    default: return nullptr;
  }
}

class NotOp final : public CpuOp {
 public:
  Status run(const OpTensors& t, RunContext& rc) override {
    const bool* x = t.inputs[0]->data<bool>();
    bool* y = t.outputs[0]->data<bool>();
    const size_t n = static_cast<size_t>(t.inputs[0]->numel());
    constexpr size_t kPart = 65536;
    rc.pool.run((n + kPart - 1) / kPart, [&](size_t i, size_t) {
      for (size_t j = i * kPart; j < std::min(n, (i + 1) * kPart); ++j) y[j] = !x[j];
    });
    return ok_status();
  }
};

// One Where row of T elements: z = c ? x : y, steps 0 or 1 each.
template <typename T>
void where_row(const bool* c, size_t sc, const T* x, size_t sx, const T* y, size_t sy, T* z, size_t n) {
  if (sc == 1 && sx == 1 && sy == 1) {
    for (size_t i = 0; i < n; ++i) z[i] = c[i] ? x[i] : y[i];
  } else if (sc == 1 && sx == 0 && sy == 1) {
    const T a = x[0];
    for (size_t i = 0; i < n; ++i) z[i] = c[i] ? a : y[i];
  } else if (sc == 1 && sx == 1 && sy == 0) {
    const T b = y[0];
    for (size_t i = 0; i < n; ++i) z[i] = c[i] ? x[i] : b;
  } else if (sc == 1) {
    const T a = x[0], b = y[0];
    for (size_t i = 0; i < n; ++i) z[i] = c[i] ? a : b;
  } else {  // one condition for the row
    const T* src = c[0] ? x : y;
    const size_t s = c[0] ? sx : sy;
    if (s == 1) {
      std::memcpy(z, src, n * sizeof(T));
    } else {
      for (size_t i = 0; i < n; ++i) z[i] = src[0];
    }
  }
}

class WhereOp final : public CpuOp {
 public:
  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& c = *t.inputs[0];
    const ir::Tensor& x = *t.inputs[1];
    const ir::Tensor& y = *t.inputs[2];
    ir::Tensor& z = *t.outputs[0];
    const std::array<const std::vector<int64_t>*, 4> dims{&c.dims(), &x.dims(), &y.dims(), &z.dims()};
    if (!cached_.same(dims)) {
      if (!rows_.plan(z.dims(), {&c.dims(), &x.dims(), &y.dims()})) return invalid_argument("inputs do not broadcast");
      cached_.set(dims);
    }
    switch (ir::dtype_size(z.dtype())) {
      case 1: return run_as<uint8_t>(t, rc);
      case 2: return run_as<uint16_t>(t, rc);
      case 4: return run_as<uint32_t>(t, rc);
      case 8: return run_as<uint64_t>(t, rc);
      default: return invalid_argument("Where: unsupported element size");
    }
  }

 private:
  template <typename T>
  Status run_as(const OpTensors& t, RunContext& rc) {
    const bool* c = t.inputs[0]->data<bool>();
    const T* x = static_cast<const T*>(t.inputs[1]->raw());
    const T* y = static_cast<const T*>(t.inputs[2]->raw());
    T* z = static_cast<T*>(t.outputs[0]->raw());
    const size_t sc = rows_.step(0), sx = rows_.step(1), sy = rows_.step(2), n = rows_.row_length();
    rows_.run(rc.pool, [&](size_t o, const std::array<size_t, 3>& off) {
      where_row<T>(c + off[0], sc, x + off[1], sx, y + off[2], sy, z + o, n);
    });
    return ok_status();
  }

  BroadcastRows<3> rows_;
  DimsKey<4> cached_;
};

template <Cmp K>
std::unique_ptr<CpuOp> make_compare_op(ir::DType t) {
  CompareOp::RowFn row = row_for<K>(t);
  return row ? std::make_unique<CompareOp>(row, ir::dtype_size(t)) : nullptr;
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_select(const ir::Node& node, const CompileContext&) {
  auto none = [] { return std::unique_ptr<CpuOp>(); };
  for (size_t i = 0; i < node.inputs.size(); ++i)
    if (!node.input(i)) return none();
  if (node.outputs.size() != 1 || ops::uses_legacy_broadcast(node)) return none();
  const std::string& op = node.op_type;
  if (op == "Not")
    return node.input(0)->type.dtype == ir::DType::kBool ? std::unique_ptr<CpuOp>(std::make_unique<NotOp>()) : none();
  if (op == "Where") {
    if (node.inputs.size() != 3 || node.input(0)->type.dtype != ir::DType::kBool) return none();
    const size_t e = ir::dtype_size(node.input(1)->type.dtype);
    if (e != 1 && e != 2 && e != 4 && e != 8) return none();
    return std::unique_ptr<CpuOp>(std::make_unique<WhereOp>());
  }
  if (node.inputs.size() != 2 || node.input(0)->type.dtype != node.input(1)->type.dtype) return none();
  const ir::DType t = node.input(0)->type.dtype;
  if (op == "Equal") return make_compare_op<Cmp::kEqual>(t);
  if (op == "Less") return make_compare_op<Cmp::kLess>(t);
  if (op == "Greater") return make_compare_op<Cmp::kGreater>(t);
  if (op == "LessOrEqual") return make_compare_op<Cmp::kLessOrEqual>(t);
  if (op == "GreaterOrEqual") return make_compare_op<Cmp::kGreaterOrEqual>(t);
  if (op == "And") return make_compare_op<Cmp::kAnd>(t);
  if (op == "Or") return make_compare_op<Cmp::kOr>(t);
  if (op == "Xor") return make_compare_op<Cmp::kXor>(t);
  return none();
}

}  // namespace nfuse::backends::cpu
