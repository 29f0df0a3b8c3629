// Reference ConvTranspose: scatters every input element through every kernel tap.
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "ops/conv_geometry.h"

namespace nfuse::backends::ref {
namespace {

// y[n, grp*M/group + m, i*s + k*d - pad] += x[n, grp*C/group + c, i] * w[grp*C/group + c, m, k]
// for every input position i and tap k whose output position lies inside y.
void conv_transpose_scatter(const ops::ConvGeometry& g, const std::vector<double>& x, const std::vector<double>& w,
                            std::vector<double>& y) {
  const size_t r = static_cast<size_t>(g.rank());
  const int64_t in_size = product(g.in);
  const int64_t out_size = product(g.out);
  const int64_t taps = product(g.kernel);
  const int64_t cg = g.in_channels / g.group;
  const int64_t mg = g.out_channels / g.group;
  const std::vector<int64_t> tap_index = all_indices(g.kernel);
  const std::vector<int64_t> in_index = all_indices(g.in);
  const std::vector<int64_t> out_strides = strides_of(g.out.vector());
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t ci = 0; ci < g.in_channels; ++ci) {
      const int64_t m0 = (ci / cg) * mg;
      const double* x_c = x.data() + (n * g.in_channels + ci) * in_size;
      const double* w_c = w.data() + ci * mg * taps;
      double* y_n = y.data() + (n * g.out_channels + m0) * out_size;
      for (int64_t i = 0; i < in_size; ++i) {
        for (int64_t k = 0; k < taps; ++k) {
          int64_t offset = 0;
          bool inside = true;
          for (size_t d = 0; d < r && inside; ++d) {
            const int64_t p = in_index[static_cast<size_t>(i) * r + d] * g.strides[d] - g.pad_begin[d] +
                              tap_index[static_cast<size_t>(k) * r + d] * g.dilations[d];
            inside = p >= 0 && p < g.out[d];
            offset += p * out_strides[d];
          }
          if (!inside) continue;
          for (int64_t m = 0; m < mg; ++m) y_n[m * out_size + offset] += x_c[i] * w_c[m * taps + k];
        }
      }
    }
  }
}

Status conv_transpose(KernelArgs& a) {
  NFUSE_ASSIGN_OR_RETURN(ops::ConvGeometry g,
                         ops::resolve_conv_transpose(a.attrs(), a.in(0).dims(), a.in(1).dims()));
  const int64_t out_size = product(g.out);
  std::vector<double> y(static_cast<size_t>(g.batch * g.out_channels * out_size), 0.0);
  if (a.has_in(2)) {
    if (a.in(2).numel() != g.out_channels) return a.error("bias must have one element per output channel");
    const std::vector<double> bias = to_doubles(a.in(2));
    for (size_t i = 0; i < y.size(); ++i) y[i] = bias[(i / static_cast<size_t>(out_size)) % bias.size()];
  }
  conv_transpose_scatter(g, to_doubles(a.in(0)), to_doubles(a.in(1)), y);
  from_doubles(y, a.out(0));
  return ok_status();
}

}  // namespace

void register_conv_transpose_kernels(KernelRegistry& registry) { registry.add("ConvTranspose", conv_transpose); }

}  // namespace nfuse::backends::ref
