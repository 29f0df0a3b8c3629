// Pad: every output element reads input element (o - pad_begin) per dim, mapped back into
// range by the mode (constant: outside is the pad value; edge: clamp; reflect: mirror without
// repeating the border, periodically as numpy does for pads wider than the dim).
#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_tensor_util.h"
#include "ops/pad_mode.h"
#include "ops/tensor_params.h"

namespace nfuse::backends::ref {
namespace {

using ops::map_pad_index;
using ops::PadMode;

Status pad(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  const PadMode mode = ops::pad_mode_of(a.attrs().get_string("mode", "constant")).value_or(PadMode::kConstant);
  auto pads = ops::ints_from_attr_or_input(a.attrs(), "pads", a.has_in(1) ? &a.in(1) : nullptr);
  const size_t r = x.dims().size();
  if (!pads || pads->size() != 2 * r || y.dims().size() != r) return a.error("pads do not match the input rank");
  for (size_t d = 0; d < r; ++d) {
    if (y.dims()[d] != x.dims()[d] + (*pads)[d] + (*pads)[d + r]) return a.error("output dims do not match pads");
    if (mode != PadMode::kConstant && x.dims()[d] == 0 && y.dims()[d] > 0) return a.error("cannot pad an empty dim");
  }
  // The pad value, stored once in the output dtype.
  ir::Tensor value = ir::Tensor::allocate(x.dtype(), {});
  if (a.attrs().has("value")) {
    ir::store_from_double(x.dtype(), value.raw(), 0, a.attrs().get_float("value", 0));
  } else if (a.has_in(2) && a.in(2).numel() > 0) {
    if (a.in(2).dtype() != x.dtype()) return a.error("constant_value must have the input's dtype");
    copy_elem(value.raw(), 0, a.in(2).raw(), 0, ir::dtype_size(x.dtype()));
  }
  const std::vector<int64_t> strides = strides_of(x.dims());
  const size_t esize = ir::dtype_size(x.dtype());
  for_each_index(y.dims(), [&](const std::vector<int64_t>& idx, int64_t linear) {
    int64_t src = 0;
    for (size_t d = 0; d < r; ++d) {
      int64_t i = idx[d] - (*pads)[d];
      if (!map_pad_index(i, x.dims()[d], mode)) {
        copy_elem(y.raw(), linear, value.raw(), 0, esize);
        return;
      }
      src += i * strides[d];
    }
    copy_elem(y.raw(), linear, x.raw(), src, esize);
  });
  return ok_status();
}

}  // namespace

void register_pad_kernels(KernelRegistry& registry) { registry.add("Pad", pad); }

}  // namespace nfuse::backends::ref
