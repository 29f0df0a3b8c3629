// nfuse.QLinearLookup on the x8-lut kernels: one byte lookup per element, bit-exact with the
// reference kernel (it is pure selection). s8 inputs index the table with x + 128, which for the
// raw byte b of x is b ^ 0x80; the op rotates the table by 128 once per run (256 bytes) so the
// kernel reads raw bytes as indices. Large tensors are split over the intra-op pool. A [C, 256]
// table (one per channel of axis 1) runs the same kernel over each channel's plane. 16-bit
// inputs take a 65536-entry table on the x16-lut kernels, rotated into index order once at
// compile time (the table must be a constant there).
#include <algorithm>
#include <vector>

#include "backends/cpu/cpu_op.h"
#include "kernels/x16-lut/x16_lut.h"
#include "kernels/x8-lut/x8_lut.h"

namespace nfuse::backends::cpu {
namespace {

bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }
bool is_q16(ir::DType t) { return t == ir::DType::kU16 || t == ir::DType::kI16; }

// Below this many bytes one thread finishes before the pool would hand out the work.
constexpr size_t kParallelMinBytes = size_t{128} << 10;
constexpr size_t kMinTaskBytes = size_t{32} << 10;

class QLinearLookupOp final : public CpuOp {
 public:
  // `channel_tables`: a constant [C, 256] table already in the kernels' index order (one per
  // channel), prepared once at compile time; empty for a 256-entry table.
  QLinearLookupOp(kernels::X8LutFn fn, std::vector<uint8_t> channel_tables)
      : fn_(fn), channel_tables_(std::move(channel_tables)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const ir::Tensor& x = *t.inputs[0];
    const ir::Tensor& table = *t.inputs[1];
    ir::Tensor& y = *t.outputs[0];
    if (table.rank() == 2) return run_per_channel(x, y, rc);
    if (table.numel() != 256) return invalid_model("QLinearLookup: table must have 256 elements");
    alignas(64) uint8_t tab[256];
    kernels::x8_lut_index_table(static_cast<const uint8_t*>(table.raw()), x.dtype() == ir::DType::kI8, tab);
    const auto* in = static_cast<const uint8_t*>(x.raw());
    auto* out = static_cast<uint8_t*>(y.raw());
    const size_t n = static_cast<size_t>(x.numel());
    const size_t threads = rc.pool.threads();
    if (n < kParallelMinBytes || threads <= 1) {
      fn_(in, out, n, tab);
      return ok_status();
    }
    // About four tasks per thread for balance, each a whole number of 64-byte vectors.
    size_t chunk = std::max(kMinTaskBytes, n / (threads * 4));
    chunk = (chunk + 63) / 64 * 64;
    const size_t tasks = (n + chunk - 1) / chunk;
    rc.pool.run(tasks, [&](size_t task, size_t) {
      const size_t begin = task * chunk;
      fn_(in + begin, out + begin, std::min(chunk, n - begin), tab);
    });
    return ok_status();
  }

 private:
  Status run_per_channel(const ir::Tensor& x, ir::Tensor& y, RunContext& rc) {
    const int64_t channels = static_cast<int64_t>(channel_tables_.size() / 256);
    if (channels == 0 || x.rank() < 2 || x.dim(1) != channels)
      return invalid_model("QLinearLookup: a [C, 256] table needs X with C channels on axis 1");
    const uint8_t* tabs = channel_tables_.data();
    const size_t inner = static_cast<size_t>(x.numel() / std::max<int64_t>(1, x.dim(0) * channels));
    const size_t planes = static_cast<size_t>(x.dim(0) * channels);
    const auto* in = static_cast<const uint8_t*>(x.raw());
    auto* out = static_cast<uint8_t*>(y.raw());
    auto plane = [&](size_t p, size_t) {
      fn_(in + p * inner, out + p * inner, inner, tabs + (p % static_cast<size_t>(channels)) * 256);
    };
    if (static_cast<size_t>(x.numel()) < kParallelMinBytes || rc.pool.threads() <= 1) {
      for (size_t p = 0; p < planes; ++p) plane(p, 0);
    } else {
      run_items(rc.pool, planes, items_per_task(planes, inner, rc.pool.threads(), kMinTaskOutputs), plane);
    }
    return ok_status();
  }

  kernels::X8LutFn fn_;
  std::vector<uint8_t> channel_tables_;
};

// 16-bit X: one 65536-entry table in index order (x16_lut_index_table), split over the pool
// like the 8-bit op.
class QLinearLookup16Op final : public CpuOp {
 public:
  explicit QLinearLookup16Op(std::vector<uint16_t> table) : table_(std::move(table)) {}

  Status run(const OpTensors& t, RunContext& rc) override {
    const auto* in = static_cast<const uint16_t*>(t.inputs[0]->raw());
    auto* out = static_cast<uint16_t*>(t.outputs[0]->raw());
    const size_t n = static_cast<size_t>(t.inputs[0]->numel());
    const size_t threads = rc.pool.threads();
    if (n * sizeof(uint16_t) < kParallelMinBytes || threads <= 1) {
      kernels::x16_lut__scalar_u8(in, out, n, table_.data());
      return ok_status();
    }
    size_t chunk = std::max(kMinTaskBytes / sizeof(uint16_t), n / (threads * 4));
    chunk = (chunk + 31) / 32 * 32;
    rc.pool.run((n + chunk - 1) / chunk, [&](size_t task, size_t) {
      const size_t begin = task * chunk;
      kernels::x16_lut__scalar_u8(in + begin, out + begin, std::min(chunk, n - begin), table_.data());
    });
    return ok_status();
  }

 private:
  std::vector<uint16_t> table_;
};

Result<std::unique_ptr<CpuOp>> make_qlinear_lookup16(const ir::Node& node) {
  const ir::DType x = node.input(0)->type.dtype, table = node.input(1)->type.dtype;
  const ir::Value* t = node.input(1);
  if (!is_q16(table) || node.output(0)->type.dtype != table || !t->constant || t->constant->numel() != 65536 ||
      t->constant->rank() != 1)
    return std::unique_ptr<CpuOp>();
  std::vector<uint16_t> index_table(kernels::kX16LutEntries);
  kernels::x16_lut_index_table(static_cast<const uint16_t*>(t->constant->raw()), x == ir::DType::kI16,
                               index_table.data());
  return std::unique_ptr<CpuOp>(std::make_unique<QLinearLookup16Op>(std::move(index_table)));
}

}  // namespace

Result<std::unique_ptr<CpuOp>> make_qlinear_lookup(const ir::Node& node, const CompileContext&) {
  if (node.num_inputs() != 2 || !node.input(0) || !node.input(1) || !node.output(0)) return std::unique_ptr<CpuOp>();
  const ir::DType x = node.input(0)->type.dtype, table = node.input(1)->type.dtype;
  if (ops::has_fused_epilogue(node)) return std::unique_ptr<CpuOp>();
  if (is_q16(x)) return make_qlinear_lookup16(node);
  if (!is_q8(x) || !is_q8(table) || node.output(0)->type.dtype != table) return std::unique_ptr<CpuOp>();
  // A [C, 256] table must be a constant (fuse_qdq_lookup makes it one): its index tables are
  // prepared here, not on every run.
  std::vector<uint8_t> channel_tables;
  if (const ir::Value* t = node.input(1); t->type.shape.rank_known() && t->type.shape.rank() == 2) {
    if (!t->constant || t->constant->rank() != 2 || t->constant->dim(1) != 256) return std::unique_ptr<CpuOp>();
    const int64_t channels = t->constant->dim(0);
    channel_tables.resize(static_cast<size_t>(channels) * 256);
    for (int64_t c = 0; c < channels; ++c)
      kernels::x8_lut_index_table(static_cast<const uint8_t*>(t->constant->raw()) + c * 256, x == ir::DType::kI8,
                                  channel_tables.data() + c * 256);
  }
  return std::unique_ptr<CpuOp>(
      std::make_unique<QLinearLookupOp>(kernels::x8_lut_kernel(kernels::selected_isa()), std::move(channel_tables)));
}

}  // namespace nfuse::backends::cpu
