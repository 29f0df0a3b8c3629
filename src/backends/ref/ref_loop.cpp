// Reference Loop: runs the body while i < M (when M is given) and cond holds (when cond is
// given; without a cond input the body's cond output is ignored, as the ONNX spec's for-loop
// form says). Carried values may change shape between iterations. Allocates its outputs
// (kernel_allocates_outputs): the final carried values, and each scan output's per-iteration
// tensors stacked along a new axis 0, which must agree in dtype and dims.
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"
#include "ops/subgraph_infer.h"

namespace nfuse::backends::ref {
namespace {

// The empty stack of a scan output when no iteration ran: [0, per-step dims] where inference
// knows them, [0] otherwise.
ir::Tensor empty_scan_output(const KernelArgs& a, const ir::Graph& body, int n, int j) {
  std::vector<ir::TensorType> in{{ir::DType::kI64, ir::Shape(std::vector<ir::Dim>{})},
                                 {ir::DType::kBool, ir::Shape(std::vector<ir::Dim>{})}};
  for (int i = 0; i < n; ++i) in.push_back({a.in(2 + i).dtype(), ir::Shape::from_dims(a.in(2 + i).dims())});
  ir::TensorType t = body.outputs()[static_cast<size_t>(1 + n + j)]->type;
  auto types = ops::infer_subgraph(a.node, body, in);
  if (types.ok()) t = (*types)[static_cast<size_t>(1 + n + j)];
  std::vector<int64_t> dims{0};
  if (auto d = t.shape.static_dims()) dims.insert(dims.end(), d->begin(), d->end());
  return ir::Tensor::allocate(t.dtype == ir::DType::kUndefined ? ir::DType::kF32 : t.dtype, dims);
}

Result<ir::Tensor> stack(const KernelArgs& a, const std::vector<ir::Tensor>& steps, int j) {
  const ir::Tensor& first = steps.front();
  std::vector<int64_t> dims{static_cast<int64_t>(steps.size())};
  dims.insert(dims.end(), first.dims().begin(), first.dims().end());
  ir::Tensor out = ir::Tensor::allocate(first.dtype(), dims);
  char* dst = static_cast<char*>(out.raw());
  for (const ir::Tensor& s : steps) {
    if (s.dtype() != first.dtype() || s.dims() != first.dims()) {
      return a.error("scan output " + std::to_string(j) + " changes from " + ir::dims_to_string(first.dims()) +
                     " to " + ir::dims_to_string(s.dims()) + " between iterations");
    }
    if (s.bytes()) std::memcpy(dst, s.raw(), s.bytes());
    dst += s.bytes();
  }
  return out;
}

Status loop(KernelArgs& a) {
  auto body = a.attrs().get_graph("body");
  if (!body) return a.error("body graph is missing");
  const int n = static_cast<int>(a.inputs.size()) - 2;
  const int k = a.num_outputs() - n;
  if (n < 0 || k < 0 || static_cast<int>(body->outputs().size()) != 1 + n + k) {
    return a.error("input/output counts do not match the body");
  }
  const int64_t max_trip = a.has_in(0) ? a.in(0).get_int(0) : std::numeric_limits<int64_t>::max();
  const bool has_cond = a.has_in(1);
  bool cond = has_cond ? a.in(1).get_double(0) != 0.0 : true;
  std::vector<ir::Tensor> carried;
  for (int i = 0; i < n; ++i) carried.push_back(a.in(2 + i));
  std::vector<std::vector<ir::Tensor>> scans(static_cast<size_t>(k));
  for (int64_t iter = 0; iter < max_trip && cond; ++iter) {
    std::vector<ir::Tensor> inputs{ir::Tensor::from_vector<int64_t>({iter}, {}),
                                   ir::Tensor::from_vector<bool>({cond}, {})};
    inputs.insert(inputs.end(), carried.begin(), carried.end());
    NFUSE_ASSIGN_OR_RETURN(auto outs, a.run_body(*body, inputs));
    if (static_cast<int>(outs.size()) != 1 + n + k) return a.error("body gave the wrong number of outputs");
    if (has_cond) {
      if (outs[0].numel() < 1) return a.error("body's cond output has no element");
      cond = outs[0].get_double(0) != 0.0;
    }
    for (int i = 0; i < n; ++i) {
      if (outs[static_cast<size_t>(1 + i)].dtype() != carried[static_cast<size_t>(i)].dtype()) {
        return a.error("loop-carried value " + std::to_string(i) + " changed dtype");
      }
      carried[static_cast<size_t>(i)] = std::move(outs[static_cast<size_t>(1 + i)]);
    }
    for (int j = 0; j < k; ++j) scans[static_cast<size_t>(j)].push_back(std::move(outs[static_cast<size_t>(1 + n + j)]));
  }
  // Outputs own their data: a carried value may still be an input's (or the body's) buffer.
  for (int i = 0; i < n; ++i) a.out(i) = carried[static_cast<size_t>(i)].clone();
  for (int j = 0; j < k; ++j) {
    const auto& steps = scans[static_cast<size_t>(j)];
    if (steps.empty()) {
      a.out(n + j) = empty_scan_output(a, *body, n, j);
    } else {
      NFUSE_ASSIGN_OR_RETURN(a.out(n + j), stack(a, steps, j));
    }
  }
  return ok_status();
}

}  // namespace

void register_loop_kernels(KernelRegistry& registry) { registry.add("Loop", loop); }

}  // namespace nfuse::backends::ref
