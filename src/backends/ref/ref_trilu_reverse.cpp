// Trilu and ReverseSequence.
#include <cstring>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"

namespace nfuse::backends::ref {
namespace {

// Keeps element (i, j) of every matrix in the last two dims when j - i >= k (upper) or
// j - i <= k (lower); the rest stays zero (outputs arrive zero-filled, and all-zero bytes are
// 0 in every dtype).
Status trilu(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  const bool upper = a.attrs().get_int("upper", 1) != 0;
  const int64_t k = a.has_in(1) && a.in(1).numel() > 0 ? a.in(1).get_int(0) : 0;
  const int64_t rows = x.dim(x.rank() - 2), cols = x.dim(x.rank() - 1);
  const int64_t matrices = rows * cols == 0 ? 0 : x.numel() / (rows * cols);
  const size_t esize = ir::dtype_size(x.dtype());
  for (int64_t m = 0; m < matrices; ++m) {
    for (int64_t i = 0; i < rows; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        // j - i cannot overflow; comparing against k avoids computing i + k.
        const bool keep = upper ? (j - i >= k) : (j - i <= k);
        const int64_t e = (m * rows + i) * cols + j;
        if (keep) {
          copy_elem(y.raw(), e, x.raw(), e, esize);
        } else {
          std::memset(static_cast<char*>(y.raw()) + static_cast<size_t>(e) * esize, 0, esize);
        }
      }
    }
  }
  return ok_status();
}

Status reverse_sequence(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  const ir::Tensor& lens = a.in(1);
  ir::Tensor& y = a.out(0);
  const int batch_axis = static_cast<int>(a.attrs().get_int("batch_axis", 1));
  const int time_axis = 1 - batch_axis;
  const int64_t batch = x.dim(batch_axis), steps = x.dim(time_axis);
  if (lens.numel() != batch) return a.error("sequence_lens must have one entry per batch element");
  if (x.bytes()) std::memcpy(y.raw(), x.raw(), x.bytes());
  int64_t inner = 1;
  for (int d = 2; d < x.rank(); ++d) inner *= x.dim(d);
  const size_t esize = ir::dtype_size(x.dtype());
  const size_t block = static_cast<size_t>(inner) * esize;
  const int64_t bstride = batch_axis == 0 ? steps * inner : inner;
  const int64_t tstride = time_axis == 0 ? batch * inner : inner;
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = lens.get_int(b);
    if (len < 0 || len > steps) return a.error("sequence length " + std::to_string(len) + " is out of range");
    for (int64_t t = 0; t < len && block; ++t) {
      const int64_t dst = b * bstride + t * tstride;
      const int64_t src = b * bstride + (len - 1 - t) * tstride;
      std::memcpy(static_cast<char*>(y.raw()) + static_cast<size_t>(dst) * esize,
                  static_cast<const char*>(x.raw()) + static_cast<size_t>(src) * esize, block);
    }
  }
  return ok_status();
}

}  // namespace

void register_trilu_reverse_kernels(KernelRegistry& registry) {
  registry.add("Trilu", trilu);
  registry.add("ReverseSequence", reverse_sequence);
}

}  // namespace nfuse::backends::ref
