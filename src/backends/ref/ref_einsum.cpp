// Reference Einsum: one loop over every combination of label values, in double.
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "backends/ref/ref_nn_util.h"
#include "backends/ref/ref_util.h"
#include "ops/einsum.h"

namespace nfuse::backends::ref {
namespace {

// y[output labels] = sum over the other labels of the product of every operand at its labels.
// A label repeated within one operand walks its diagonal (its strides add up); a broadcast
// ellipsis dim of size 1 has stride 0.
Status einsum(KernelArgs& a) {
  const int n_in = static_cast<int>(a.inputs.size());
  std::vector<int> ranks;
  std::vector<std::vector<int64_t>> dims;
  std::vector<std::vector<double>> values;
  for (int i = 0; i < n_in; ++i) {
    ranks.push_back(a.in(i).rank());
    dims.push_back(a.in(i).dims());
    values.push_back(to_doubles(a.in(i)));
  }
  NFUSE_ASSIGN_OR_RETURN(ops::EinsumSpec spec, ops::parse_einsum(a.attrs().get_string("equation", ""), ranks));
  NFUSE_ASSIGN_OR_RETURN(std::vector<int64_t> sizes, ops::einsum_label_sizes(spec, dims));
  // Loop order: output labels (so y is written in row-major order), then the summed labels.
  std::vector<int> order = spec.output;
  std::vector<bool> used(static_cast<size_t>(spec.num_labels), false);
  for (int id : order) used[static_cast<size_t>(id)] = true;
  for (const auto& t : spec.inputs)
    for (int id : t)
      if (!used[static_cast<size_t>(id)]) {
        used[static_cast<size_t>(id)] = true;
        order.push_back(id);
      }
  // strides[i][j]: how far operand i moves when label order[j] advances.
  std::vector<std::vector<int64_t>> strides(static_cast<size_t>(n_in), std::vector<int64_t>(order.size(), 0));
  for (int i = 0; i < n_in; ++i) {
    const std::vector<int64_t> s = strides_of(dims[static_cast<size_t>(i)]);
    for (size_t d = 0; d < dims[static_cast<size_t>(i)].size(); ++d) {
      const int id = spec.inputs[static_cast<size_t>(i)][d];
      if (dims[static_cast<size_t>(i)][d] == 1) continue;
      for (size_t j = 0; j < order.size(); ++j)
        if (order[j] == id) strides[static_cast<size_t>(i)][j] += s[d];
    }
  }
  std::vector<int64_t> extent;
  for (int id : order) extent.push_back(sizes[static_cast<size_t>(id)]);
  const int64_t out_size = a.out(0).numel();
  const int64_t total = product(extent);
  const int64_t inner = out_size ? total / out_size : 0;  // summed combinations per output element
  std::vector<double> y(static_cast<size_t>(out_size), 0.0);
  std::vector<int64_t> idx(order.size(), 0), off(static_cast<size_t>(n_in), 0);
  for (int64_t t = 0; t < total; ++t) {
    double p = 1.0;
    for (int i = 0; i < n_in; ++i) p *= values[static_cast<size_t>(i)][static_cast<size_t>(off[static_cast<size_t>(i)])];
    y[static_cast<size_t>(t / inner)] += p;
    for (size_t j = order.size(); j-- > 0;) {
      ++idx[j];
      for (int i = 0; i < n_in; ++i) off[static_cast<size_t>(i)] += strides[static_cast<size_t>(i)][j];
      if (idx[j] < extent[j]) break;
      for (int i = 0; i < n_in; ++i) off[static_cast<size_t>(i)] -= strides[static_cast<size_t>(i)][j] * idx[j];
      idx[j] = 0;
    }
  }
  from_doubles(y, a.out(0));
  return ok_status();
}

}  // namespace

void register_einsum_kernels(KernelRegistry& registry) { registry.add("Einsum", einsum); }

}  // namespace nfuse::backends::ref
