#include "backends/ref/ref_fused_epilogue.h"

#include "backends/ref/ref_elementwise_util.h"
#include "ops/fused_epilogue.h"

namespace nfuse::backends::ref {

Status apply_fused_epilogue(KernelArgs& a) {
  if (!ops::has_fused_epilogue(a.node)) return ok_status();
  NFUSE_ASSIGN_OR_RETURN(const ops::FusedEpilogue e, ops::read_fused_epilogue(a.node));
  ir::Tensor& y = a.out(0);
  const ir::Tensor* r = nullptr;
  if (e.residual) {
    if (a.implicit_inputs.empty() || !a.implicit_inputs[0]) return a.error("the fused residual has no value");
    r = a.implicit_inputs[0];
    if (r->dtype() != y.dtype() || r->dims() != y.dims()) {
      return a.error("fused residual " + std::string(ir::dtype_name(r->dtype())) + "[" +
                     ir::dims_to_string(r->dims()) + "] does not match the output " +
                     std::string(ir::dtype_name(y.dtype())) + "[" + ir::dims_to_string(y.dims()) + "]");
    }
  }
  bool done = false;
  ir::visit_dtype(y.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      T* out = y.data<T>();
      const T* res = r ? r->data<T>() : nullptr;
      for (int64_t i = 0; i < y.numel(); ++i) {
        // Rounding after the add matches an unfused graph, where the Add writes its own tensor.
        T v = res ? from_double<T>(to_double(out[i]) + to_double(res[i])) : out[i];
        out[i] = from_double<T>(ops::apply_fused_activation(e.activation, e.params, to_double(v)));
      }
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, y.dtype());
}

}  // namespace nfuse::backends::ref
