// QLinearAdd and QLinearMul (com.microsoft) on the cpu backend: the output is walked as runs of
// contiguous elements along its trailing axes, over which each operand is either contiguous too
// (same-shape part) or one repeated value (scalar / per-channel / per-row broadcast); each run
// is one q8-vbinary kernel call. Bit-exact with ref_qlinear_binary.cpp.
// nfuse's 16-bit form (u16 / i16 codes, W8A16 graphs) walks the same runs in L1-sized pieces:
// each operand dequantized to f32 by the q-dequant kernels (a repeated one once), added or
// multiplied, and quantized by the f32-qvcvt kernels, all bit-exact with quantize_value /
// dequantize_value.
#include <cmath>
#include <cstring>

#include "backends/cpu/cpu_qlinear_ops.h"
#include "kernels/f32-qvcvt/f32_qvcvt.h"
#include "kernels/q-dequant/q_dequant.h"
#include "kernels/q8-vbinary/q8_vbinary.h"
#include "kernels/quant_arithmetic.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kChunk = 16384;  // elements per task: a multiple of every kernel's step

// The run decomposition of one broadcast: output = outer index space x `run` trailing elements.
struct RunPlan {
  size_t run = 1;
  bool a_full = true, b_full = true;  // operand contiguous over the run (else one value)
  std::vector<int64_t> outer_dims, a_strides, b_strides;
  size_t outer_count = 1;
};

RunPlan plan_runs(const std::vector<int64_t>& a_in, const std::vector<int64_t>& b_in, const std::vector<int64_t>& out) {
  const size_t r = out.size();
  auto pad = [&](const std::vector<int64_t>& d) {
    std::vector<int64_t> p(r - d.size(), 1);
    p.insert(p.end(), d.begin(), d.end());
    return p;
  };
  const std::vector<int64_t> a = pad(a_in), b = pad(b_in);
  bool af = true, ac = true, bf = true, bc = true;
  size_t s = r;
  for (size_t k = r; k-- > 0;) {
    const bool naf = af && a[k] == out[k], nac = ac && a[k] == 1;
    const bool nbf = bf && b[k] == out[k], nbc = bc && b[k] == 1;
    if (!(naf || nac) || !(nbf || nbc) || (!naf && !nbf)) break;
    af = naf, ac = nac, bf = nbf, bc = nbc;
    s = k;
  }
  RunPlan p;
  p.a_full = af;
  p.b_full = bf;
  for (size_t k = s; k < r; ++k) p.run *= static_cast<size_t>(out[k]);
  int64_t sa = 1, sb = 1;
  std::vector<int64_t> as(r), bs(r);
  for (size_t k = r; k-- > 0;) {
    as[k] = a[k] == 1 ? 0 : sa;
    bs[k] = b[k] == 1 ? 0 : sb;
    sa *= a[k];
    sb *= b[k];
  }
  p.outer_dims.assign(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(s));
  p.a_strides.assign(as.begin(), as.begin() + static_cast<std::ptrdiff_t>(s));
  p.b_strides.assign(bs.begin(), bs.begin() + static_cast<std::ptrdiff_t>(s));
  for (int64_t d : p.outer_dims) p.outer_count *= static_cast<size_t>(d);
  return p;
}

// The output position of `task` (chunks tasks per run): the run's start in y, and each
// operand's start (a repeated operand's one value).
struct RunAt {
  size_t y = 0, len = 0;
  int64_t a = 0, b = 0;
};
RunAt run_at(const RunPlan& plan, size_t task, size_t chunks, size_t chunk) {
  size_t o = task / chunks;
  const size_t begin = (task % chunks) * chunk;
  RunAt at;
  at.len = std::min(chunk, plan.run - begin);
  for (size_t d = plan.outer_dims.size(); d-- > 0;) {
    const size_t i = o % static_cast<size_t>(plan.outer_dims[d]);
    o /= static_cast<size_t>(plan.outer_dims[d]);
    at.a += static_cast<int64_t>(i) * plan.a_strides[d];
    at.b += static_cast<int64_t>(i) * plan.b_strides[d];
  }
  at.y = (task / chunks) * plan.run + begin;
  if (plan.a_full) at.a += static_cast<int64_t>(begin);
  if (plan.b_full) at.b += static_cast<int64_t>(begin);
  return at;
}

template <typename T>
class QLinearBinaryOp final : public CpuOp {
 public:
  QLinearBinaryOp(bool mul, const kernels::Q8VbinaryParams& p) : mul_(mul), p_(p) {
    swapped_ = p;
    std::swap(swapped_.a_zp, swapped_.b_zp);
    if (!mul) std::swap(swapped_.a_mult, swapped_.b_mult);
    swapped_.swapped = true;
  }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& ta = *t.inputs[0];
    const ir::Tensor& tb = *t.inputs[3];
    ir::Tensor& ty = *t.outputs[0];
    if (ty.numel() == 0) return ok_status();
    const RunPlan plan = plan_runs(ta.dims(), tb.dims(), ty.dims());
    const auto& cfg = config();
    const T* a = ta.data<T>();
    const T* b = tb.data<T>();
    T* y = ty.data<T>();
    const size_t chunks = (plan.run + kChunk - 1) / kChunk;
    rc.pool.run(plan.outer_count * chunks, [&](size_t task, size_t) {
      const RunAt at = run_at(plan, task, chunks, kChunk);
      T* yr = y + at.y;
      const T* ar = a + at.a;
      const T* br = b + at.b;
      if (plan.a_full && plan.b_full)
        (mul_ ? cfg.mul : cfg.add)(ar, br, yr, at.len, p_);
      else if (plan.a_full)
        (mul_ ? cfg.mulc : cfg.addc)(ar, br, yr, at.len, p_);
      else
        (mul_ ? cfg.mulc : cfg.addc)(br, ar, yr, at.len, swapped_);
    });
    return ok_status();
  }

 private:
  static const kernels::Q8VbinaryConfig<T>& config() {
    if constexpr (std::is_same_v<T, uint8_t>) return kernels::qu8_vbinary_config(kernels::selected_isa());
    else return kernels::qs8_vbinary_config(kernels::selected_isa());
  }

  bool mul_;
  kernels::Q8VbinaryParams p_, swapped_;
};

// The 16-bit form: y = quantize(dequantize(a) + | * dequantize(b)), piece by piece in f32.
class QLinearBinary16Op final : public CpuOp {
 public:
  struct Params {
    float scale = 1.0f;
    int32_t zp = 0;
  };
  QLinearBinary16Op(bool mul, bool is_signed, Params a, Params b, Params y)
      : mul_(mul), flip_(is_signed ? 0x8000 : 0), a_(a), b_(b) {
    // Signed codes run as unsigned with the sign bit flipped and the zero point moved alike.
    const int32_t shift = is_signed ? 32768 : 0;
    a_.zp += shift;
    b_.zp += shift;
    q_ = kernels::f32_quantize_params(y.scale, y.zp, is_signed, 16);
  }

  size_t scratch_floats(const OpTensors&, size_t) const override { return 2 * kPiece; }

  Status run(const OpTensors& t, RunContext& rc) override {
    if (rc.scratch.floats() < 2 * kPiece) return internal_error("QLinearAdd: scratch too small");
    ir::Tensor& ty = *t.outputs[0];
    if (ty.numel() == 0) return ok_status();
    const RunPlan plan = plan_runs(t.inputs[0]->dims(), t.inputs[3]->dims(), ty.dims());
    const kernels::Isa isa = kernels::selected_isa();
    const kernels::Q16DequantizeFn dq = kernels::q_dequantize_select(isa).q16;
    const kernels::F32Quantize16Fn q16 = kernels::f32_quantize_q16_select(isa);
    const auto* a = static_cast<const uint16_t*>(t.inputs[0]->raw());
    const auto* b = static_cast<const uint16_t*>(t.inputs[3]->raw());
    auto* y = static_cast<uint16_t*>(ty.raw());
    const size_t chunks = (plan.run + kChunk - 1) / kChunk;
    rc.pool.run(plan.outer_count * chunks, [&](size_t task, size_t worker) {
      const RunAt at = run_at(plan, task, chunks, kChunk);
      float* fa = rc.scratch.get(worker);
      float* fb = fa + kPiece;
      // A repeated operand: its one value, dequantized once.
      float av = 0.0f, bv = 0.0f;
      if (!plan.a_full) dq(a + at.a, 1, flip_, a_.zp, a_.scale, &av);
      if (!plan.b_full) dq(b + at.b, 1, flip_, b_.zp, b_.scale, &bv);
      for (size_t c = 0; c < at.len; c += kPiece) {
        const size_t n = std::min(kPiece, at.len - c);
        if (plan.a_full) dq(a + at.a + static_cast<int64_t>(c), n, flip_, a_.zp, a_.scale, fa);
        if (plan.b_full) dq(b + at.b + static_cast<int64_t>(c), n, flip_, b_.zp, b_.scale, fb);
        if (plan.a_full && plan.b_full)
          combine(fa, fb, n);
        else if (plan.a_full)
          combine_value(fa, bv, n);
        else
          combine_value_first(av, fb, n, fa);
        q16(fa, n, q_, y + at.y + c);
      }
    });
    return ok_status();
  }

 private:
  static constexpr size_t kPiece = 1024;  // floats per operand piece: both pieces stay in L1

  // fa = fa op fb, and the broadcast forms; one IEEE add or multiply per element, as ref.
  void combine(float* fa, const float* fb, size_t n) const {
    if (mul_)
      for (size_t i = 0; i < n; ++i) fa[i] *= fb[i];
    else
      for (size_t i = 0; i < n; ++i) fa[i] += fb[i];
  }
  void combine_value(float* fa, float bv, size_t n) const {
    if (mul_)
      for (size_t i = 0; i < n; ++i) fa[i] *= bv;
    else
      for (size_t i = 0; i < n; ++i) fa[i] += bv;
  }
  void combine_value_first(float av, const float* fb, size_t n, float* out) const {
    if (mul_)
      for (size_t i = 0; i < n; ++i) out[i] = av * fb[i];
    else
      for (size_t i = 0; i < n; ++i) out[i] = av + fb[i];
  }

  bool mul_;
  uint16_t flip_;
  Params a_, b_;
  kernels::F32QuantizeParams q_;
};

// A constant one-element input's value: f32 scale or q8 zero point (absent zero point: 0).
std::optional<float> const_scale(const ir::Value* v) {
  if (!v || !v->constant || v->constant->dtype() != ir::DType::kF32 || v->constant->numel() != 1) return std::nullopt;
  return v->constant->data<float>()[0];
}
std::optional<int32_t> const_zp(const ir::Value* v, ir::DType t) {
  if (!v) return 0;
  if (!v->constant || v->constant->dtype() != t || v->constant->numel() != 1) return std::nullopt;
  return static_cast<int32_t>(v->constant->get_int(0));
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_qlinear_binary(const ir::Node& node, const CompileContext&) {
  const bool mul = node.op_type == "QLinearMul";
  const ir::Value* a = node.input(0);
  const ir::Value* b = node.input(3);
  if (!a || !b || node.outputs.size() != 1) return std::unique_ptr<CpuOp>();
  const ir::DType t = a->type.dtype;
  const bool wide = t == ir::DType::kU16 || t == ir::DType::kI16;
  if ((t != ir::DType::kU8 && t != ir::DType::kI8 && !wide) || b->type.dtype != t) return std::unique_ptr<CpuOp>();
  auto as = const_scale(node.input(1)), bs = const_scale(node.input(4)), ys = const_scale(node.input(6));
  auto az = const_zp(node.input(2), t), bz = const_zp(node.input(5), t), yz = const_zp(node.input(7), t);
  if (!as || !bs || !ys || !az || !bz || !yz) return std::unique_ptr<CpuOp>();
  if (wide) {
    return std::unique_ptr<CpuOp>(
        std::make_unique<QLinearBinary16Op>(mul, t == ir::DType::kI16, QLinearBinary16Op::Params{*as, *az},
                                            QLinearBinary16Op::Params{*bs, *bz}, QLinearBinary16Op::Params{*ys, *yz}));
  }
  kernels::Q8VbinaryParams p;
  p.a_zp = *az;
  p.b_zp = *bz;
  p.y_zp = *yz;
  // The multipliers exactly as ref_qlinear_binary.cpp computes them.
  p.a_mult = mul ? nfuse::requant_multiplier(*as, *bs, *ys) : *as / *ys;
  p.b_mult = mul ? 1.0f : *bs / *ys;
  if (!std::isfinite(p.a_mult) || !std::isfinite(p.b_mult)) return std::unique_ptr<CpuOp>();  // ref maps NaN
  if (t == ir::DType::kU8) return std::unique_ptr<CpuOp>(std::make_unique<QLinearBinaryOp<uint8_t>>(mul, p));
  return std::unique_ptr<CpuOp>(std::make_unique<QLinearBinaryOp<int8_t>>(mul, p));
}

}  // namespace nfuse::backends::cpu
