// Reference nfuse.QLinearLookup (ops/qlinear_lookup.cpp): Y[i] = table[X[i]] for unsigned X,
// table[X[i] + 128] for s8 X, table[X[i] + 32768] for s16 X; a [C, 256] table: row c for the
// elements of channel c (axis 1).
#include <cstdint>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

bool is_q8(ir::DType t) { return t == ir::DType::kU8 || t == ir::DType::kI8; }
bool is_q16(ir::DType t) { return t == ir::DType::kU16 || t == ir::DType::kI16; }

Status qlinear_lookup16(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& table = a.in(1);
  ir::Tensor& y = a.out(0);
  if (!is_q16(table.dtype()) || y.dtype() != table.dtype()) return a.error("a 16-bit X needs a u16 or s16 table and Y");
  if (table.rank() != 1 || table.numel() != 65536)
    return a.error("a 16-bit X needs a [65536] table, got " + ir::dims_to_string(table.dims()));
  const int64_t offset = x.dtype() == ir::DType::kI16 ? 32768 : 0;
  const auto* t = static_cast<const uint16_t*>(table.raw());  // u16 and s16 entries copy as bits
  auto* out = static_cast<uint16_t*>(y.raw());
  for (int64_t i = 0; i < x.numel(); ++i) out[i] = t[x.get_int(i) + offset];
  return ok_status();
}

Status qlinear_lookup(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& table = a.in(1);
  ir::Tensor& y = a.out(0);
  if (is_q16(x.dtype())) return qlinear_lookup16(a);
  if (!is_q8(x.dtype()) || !is_q8(table.dtype()) || y.dtype() != table.dtype()) {
    return a.error("X and table must be u8 or s8 (or X 16-bit), Y of the table's dtype");
  }
  const int64_t channels = table.rank() == 2 ? table.dim(0) : 1;
  if (table.numel() != 256 * channels || table.rank() > 2)
    return a.error("table must be [256] or [C, 256], got " + ir::dims_to_string(table.dims()));
  if (table.rank() == 2 && (x.rank() < 2 || x.dim(1) != channels))
    return a.error("a [C, 256] table needs X with C = " + std::to_string(channels) + " channels on axis 1, got " +
                   ir::dims_to_string(x.dims()));
  const int64_t offset = x.dtype() == ir::DType::kI8 ? 128 : 0;
  const auto* t = static_cast<const uint8_t*>(table.raw());  // u8 and s8 entries copy as bytes
  auto* out = static_cast<uint8_t*>(y.raw());
  int64_t inner = 1;
  for (int i = 2; i < x.rank(); ++i) inner *= x.dim(i);
  for (int64_t i = 0; i < x.numel(); ++i) {
    const int64_t c = channels == 1 ? 0 : (i / inner) % channels;
    out[i] = t[c * 256 + x.get_int(i) + offset];
  }
  return ok_status();
}

}  // namespace

void register_qlinear_lookup_kernels(KernelRegistry& registry) { registry.add("QLinearLookup", qlinear_lookup); }

}  // namespace nfuse::backends::ref
