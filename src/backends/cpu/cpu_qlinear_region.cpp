// nfuse.QLinearRegion on the cpu backend: the region's program (backends/qlinear_region_program.h)
// on chunks of one channel plane at a time, so the input dequantized, every step's slot and the
// result stay in L1 (kChunk floats each) instead of a full f32 tensor per op and a Q/DQ pass on
// each side; parallel over chunks. Dequantize, steps and quantize on the ISA's kernels (q-dequant,
// f32-region, f32-qvcvt), each bit-exact with its scalar form, so the op is with ref.
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "backends/qlinear_region_program.h"
#include "kernels/f32-qvcvt/f32_qvcvt.h"
#include "kernels/q-dequant/q_dequant.h"

namespace nfuse::backends::cpu {
namespace {

constexpr size_t kChunk = 512;  // elements per chunk: (steps + 1) x 2 KiB of slots
// Chunks per pool task, at most (fewer where that leaves under four tasks per worker): a task per
// chunk had two workers fetch the shared task counter every half microsecond and interleave their
// chunks through every page of the tensor, so the op ran 2.2x slower on two threads than on one
// (bench/RESULTS.md, 2026-12-07).
constexpr size_t kChunksPerTask = 64;

class QLinearRegionOp final : public CpuOp {
 public:
  QLinearRegionOp(const ir::Node& node, QLinearRegionProgram p) : node_(node), p_(std::move(p)) {}

  size_t scratch_floats(const OpTensors&, size_t) const override { return (p_.steps.size() + 1) * kChunk; }

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    ir::Tensor& y = *t.outputs[0];
    const int64_t batch = x.rank() >= 1 ? x.dim(0) : 1;
    const int64_t channels = x.rank() >= 2 ? x.dim(1) : 1;
    if (channels != p_.channels) return invalid_model(node_.label() + ": X's channels changed since compilation");
    if (rc.scratch.floats() < scratch_floats(t, 0)) return internal_error(node_.label() + ": scratch too small");
    Pass r;
    r.channels = static_cast<size_t>(channels);
    const size_t planes = static_cast<size_t>(batch * channels);
    r.inner = planes ? static_cast<size_t>(x.numel()) / planes : 0;
    r.per_plane = (r.inner + kChunk - 1) / kChunk;
    const kernels::Isa isa = kernels::selected_isa();
    r.dq = kernels::q_dequantize_select(isa);
    r.eval = kernels::region_eval_select(isa);
    // Signed input runs as unsigned with its sign bit flipped and the zero point moved alike.
    r.x_wide = x.dtype() == ir::DType::kU16 || x.dtype() == ir::DType::kI16;
    r.x_signed = x.dtype() == ir::DType::kI8 || x.dtype() == ir::DType::kI16;
    r.x_zp = static_cast<int32_t>(p_.x_zp) + (r.x_signed ? (r.x_wide ? 32768 : 128) : 0);
    r.y_wide = y.dtype() == ir::DType::kU16 || y.dtype() == ir::DType::kI16;
    const bool y_signed = y.dtype() == ir::DType::kI8 || y.dtype() == ir::DType::kI16;
    r.q = kernels::f32_quantize_params(p_.y_scale, static_cast<int32_t>(p_.y_zp), y_signed, r.y_wide ? 16 : 8);
    r.q8 = kernels::f32_quantize_q8_select(isa);
    r.q16 = kernels::f32_quantize_q16_select(isa);
    r.x = static_cast<const uint8_t*>(x.raw());
    r.y = static_cast<uint8_t*>(y.raw());
    const size_t chunks = planes * r.per_plane;
    const size_t per_task = std::clamp<size_t>(chunks / (4 * rc.pool.threads()), 1, kChunksPerTask);
    rc.pool.run((chunks + per_task - 1) / per_task, [&](size_t task, size_t worker) {
      float* scratch = rc.scratch.get(worker);
      for (size_t i = task * per_task; i < std::min(chunks, (task + 1) * per_task); ++i) run_chunk(r, i, scratch);
    });
    return ok_status();
  }

 private:
  // One run's shapes, kernels and buffers.
  struct Pass {
    size_t channels = 1, inner = 0, per_plane = 0;
    kernels::QDequantizeKernels dq;
    kernels::RegionEvalFn eval = nullptr;
    bool x_wide = false, x_signed = false, y_wide = false;
    int32_t x_zp = 0;
    kernels::F32QuantizeParams q;
    kernels::F32QuantizeFn q8 = nullptr;
    kernels::F32Quantize16Fn q16 = nullptr;
    const uint8_t* x = nullptr;
    uint8_t* y = nullptr;
  };

  // Chunk i: kChunk elements of one channel plane (fewer at the plane's end).
  void run_chunk(const Pass& r, size_t i, float* scratch) const {
    const size_t plane = i / r.per_plane, c0 = i % r.per_plane * kChunk, n = std::min(kChunk, r.inner - c0);
    const size_t at = plane * r.inner + c0;
    const size_t c = plane % r.channels;
    float* slots[65];
    for (size_t s = 0; s <= p_.steps.size(); ++s) slots[s] = scratch + s * kChunk;
    if (r.x_wide) {
      r.dq.q16(reinterpret_cast<const uint16_t*>(r.x) + at, n, r.x_signed ? 0x8000 : 0, r.x_zp, p_.x_scale, slots[0]);
    } else {
      r.dq.q8(r.x + at, n, r.x_signed ? 0x80 : 0, r.x_zp, p_.x_scale, slots[0]);
    }
    float consts[64];
    for (size_t j = 0; j < p_.constants.size(); ++j) consts[j] = p_.constants[j][c];
    r.eval(p_.steps.data(), p_.steps.size(), consts, slots, n);
    const float* result = slots[p_.steps.size()];
    if (r.y_wide) {
      r.q16(result, n, r.q, reinterpret_cast<uint16_t*>(r.y) + at);
    } else {
      r.q8(result, n, r.q, r.y + at);
    }
  }

  const ir::Node& node_;
  QLinearRegionProgram p_;
};

}  // namespace

Result<std::unique_ptr<CpuOp>> make_qlinear_region(const ir::Node& node, const CompileContext&) {
  const ir::Value* x = node.input(0);
  if (!x || !x->type.shape.rank_known() || node.num_inputs() > 64) return std::unique_ptr<CpuOp>();
  const ir::Shape& s = x->type.shape;
  if (s.rank() >= 2 && !s[1].is_static()) return std::unique_ptr<CpuOp>();
  std::vector<const ir::Tensor*> inputs;
  for (const ir::Value* v : node.inputs) {
    if (v != x && (!v || !v->constant)) return std::unique_ptr<CpuOp>();  // parameters and constants: constant
    inputs.push_back(v == x ? nullptr : &*v->constant);
  }
  auto p = read_qlinear_region(node, inputs, s.rank() >= 2 ? s[1].value : 1);
  if (!p.ok()) return p.status();
  if (p->steps.size() > 64) return std::unique_ptr<CpuOp>();  // the slot table's bound: ref runs it
  return std::unique_ptr<CpuOp>(std::make_unique<QLinearRegionOp>(node, std::move(*p)));
}

}  // namespace nfuse::backends::cpu
