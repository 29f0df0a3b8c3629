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
  const ir::Tensor* b = nullptr;
  int64_t bias_n = 0;
  if (e.bias) {
    // The bias is the last implicit input: implicit_inputs[1] with a residual, else [0].
    const size_t at = e.residual ? 1 : 0;
    if (a.implicit_inputs.size() <= at || !a.implicit_inputs[at]) return a.error("the fused bias has no value");
    b = a.implicit_inputs[at];
    bias_n = y.rank() == 0 ? 1 : y.dim(y.rank() - 1);
    if (b->dtype() != y.dtype() || b->numel() != bias_n) {
      return a.error("fused bias " + std::string(ir::dtype_name(b->dtype())) + "[" + ir::dims_to_string(b->dims()) +
                     "] does not match the last dim of the output " + std::string(ir::dtype_name(y.dtype())) + "[" +
                     ir::dims_to_string(y.dims()) + "]");
    }
  }
  bool done = false;
  ir::visit_dtype(y.dtype(), [&]<typename T>() {
    if constexpr (is_float_v<T>) {
      T* out = y.data<T>();
      const T* res = r ? r->data<T>() : nullptr;
      const T* bias = b ? b->data<T>() : nullptr;
      for (int64_t i = 0; i < y.numel(); ++i) {
        // Rounding after each add matches an unfused graph, where each Add writes its own tensor.
        T v = bias ? from_double<T>(to_double(out[i]) + to_double(bias[i % bias_n])) : out[i];
        if (res) v = from_double<T>(to_double(v) + to_double(res[i]));
        v = from_double<T>(ops::apply_fused_activation(e.activation, e.params, to_double(v)));
        // The affine rounds after each step, as the Mul and Add it replaced did.
        if (e.has_affine()) v = from_double<T>(to_double(from_double<T>(to_double(v) * e.scale)) + e.shift);
        out[i] = v;
      }
      done = true;
    }
  });
  return done ? ok_status() : dtype_error(a, y.dtype());
}

}  // namespace nfuse::backends::ref
