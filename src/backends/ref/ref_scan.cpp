// Reference Scan: slices each scan input along its axis, runs the body once per step with the
// interpreter, and writes each step's scan outputs into their slot along the output axis.
// Opset 8 adds a leading batch dim to everything and per-batch sequence_lens; steps past a
// batch entry's length leave its scan outputs at zero.
#include <cstring>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

int64_t prod(const std::vector<int64_t>& d, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= d[i];
  return p;
}

// A copy of t at index i of dim `axis`, with that dim removed.
ir::Tensor take(const ir::Tensor& t, int axis, int64_t i) {
  std::vector<int64_t> dims = t.dims();
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = prod(dims, 0, a), len = dims[a];
  const size_t inner = static_cast<size_t>(prod(dims, a + 1, dims.size())) * ir::dtype_size(t.dtype());
  dims.erase(dims.begin() + axis);
  ir::Tensor r = ir::Tensor::allocate(t.dtype(), dims);
  const auto* src = static_cast<const char*>(t.raw());
  auto* dst = static_cast<char*>(r.raw());
  for (int64_t o = 0; o < outer; ++o)
    if (inner) std::memcpy(dst + static_cast<size_t>(o) * inner, src + static_cast<size_t>(o * len + i) * inner, inner);
  return r;
}

// Writes `src` (dst's dims without `axis`) at index i of dst's dim `axis`.
void put(ir::Tensor& dst, int axis, int64_t i, const ir::Tensor& src) {
  const std::vector<int64_t>& dims = dst.dims();
  const size_t a = static_cast<size_t>(axis);
  const int64_t outer = prod(dims, 0, a), len = dims[a];
  const size_t inner = static_cast<size_t>(prod(dims, a + 1, dims.size())) * ir::dtype_size(dst.dtype());
  auto* d = static_cast<char*>(dst.raw());
  const auto* s = static_cast<const char*>(src.raw());
  for (int64_t o = 0; o < outer; ++o)
    if (inner) std::memcpy(d + static_cast<size_t>(o * len + i) * inner, s + static_cast<size_t>(o) * inner, inner);
}

std::vector<int64_t> without(std::vector<int64_t> dims, int axis) {
  dims.erase(dims.begin() + axis);
  return dims;
}

int normalized(int64_t axis, int rank) { return static_cast<int>(axis < 0 ? axis + rank : axis); }

struct ScanJob {
  const ir::Graph* body;
  std::vector<ir::Tensor> states;       // per-step body inputs 0..N-1
  std::vector<ir::Tensor> scan_inputs;  // [seq, ...] views after batch selection: axis below
  std::vector<int> in_axes;
  std::vector<int64_t> in_dirs;
  std::vector<ir::Tensor*> scan_outputs;  // written at out_axes, index below
  std::vector<int> out_axes;
  std::vector<int64_t> out_dirs;
  int64_t steps = 0;
  int64_t seq = 0;
};

Status run_steps(const KernelArgs& a, ScanJob& job) {
  const size_t n = job.states.size();
  for (int64_t t = 0; t < job.steps; ++t) {
    std::vector<ir::Tensor> inputs = job.states;
    for (size_t j = 0; j < job.scan_inputs.size(); ++j) {
      const int64_t at = job.in_dirs[j] ? job.seq - 1 - t : t;
      inputs.push_back(take(job.scan_inputs[j], job.in_axes[j], at));
    }
    NFUSE_ASSIGN_OR_RETURN(auto outs, a.run_body(*job.body, inputs));
    if (outs.size() != n + job.scan_outputs.size()) return a.error("body gave the wrong number of outputs");
    for (size_t i = 0; i < n; ++i) {
      if (outs[i].dtype() != job.states[i].dtype() || outs[i].dims() != job.states[i].dims()) {
        return a.error("state " + std::to_string(i) + " changed from " + ir::dims_to_string(job.states[i].dims()) +
                       " to " + ir::dims_to_string(outs[i].dims()));
      }
      job.states[i] = outs[i];
    }
    for (size_t j = 0; j < job.scan_outputs.size(); ++j) {
      ir::Tensor& dst = *job.scan_outputs[j];
      const ir::Tensor& src = outs[n + j];
      if (src.dtype() != dst.dtype() || without(dst.dims(), job.out_axes[j]) != src.dims()) {
        return a.error("scan output " + std::to_string(j) + " step is " + ir::dims_to_string(src.dims()) +
                       ", inference expected a slice of " + ir::dims_to_string(dst.dims()));
      }
      put(dst, job.out_axes[j], job.out_dirs[j] ? job.seq - 1 - t : t, src);
    }
  }
  return ok_status();
}

Status scan(KernelArgs& a) {
  auto body = a.attrs().get_graph("body");
  if (!body) return a.error("body graph is missing");
  const bool v8 = a.node.opset > 0 && a.node.opset < 9;
  const int first = v8 ? 1 : 0;
  const int k = static_cast<int>(a.attrs().get_int("num_scan_inputs", 1));
  const int n = static_cast<int>(a.inputs.size()) - first - k;
  const int m = a.num_outputs() - n;
  if (k < 1 || n < 0 || m < 0) return a.error("input/output counts do not match num_scan_inputs");
  ScanJob job;
  job.body = body.get();
  auto dirs_in = a.attrs().get_ints(v8 ? "directions" : "scan_input_directions", std::vector<int64_t>(size_t(k), 0));
  auto dirs_out = a.attrs().get_ints("scan_output_directions", std::vector<int64_t>(size_t(m), 0));
  auto axes_in = a.attrs().get_ints("scan_input_axes", std::vector<int64_t>(size_t(k), 0));
  auto axes_out = a.attrs().get_ints("scan_output_axes", std::vector<int64_t>(size_t(m), 0));
  if (dirs_in.size() != size_t(k) || (!v8 && (dirs_out.size() != size_t(m) || axes_in.size() != size_t(k) ||
                                              axes_out.size() != size_t(m)))) {
    return a.error("direction/axis attributes have the wrong length");
  }
  for (int i = 0; i < m; ++i) {
    ir::Tensor& o = a.out(n + i);
    if (o.empty()) return a.error("every scan output must be materialised");
    std::fill_n(static_cast<char*>(o.raw()), o.bytes(), 0);
  }
  const int64_t batch = v8 ? (a.in(first).rank() > 0 ? a.in(first).dim(0) : -1) : 1;
  for (int i = first; v8 && i < first + n + k; ++i) {
    if (a.in(i).rank() < (i < first + n ? 1 : 2) || a.in(i).dim(0) != batch) return a.error("inputs disagree on batch");
  }
  for (int i = 0; v8 && i < a.num_outputs(); ++i)
    if (!a.out(i).empty() && (a.out(i).rank() < 1 || a.out(i).dim(0) != batch)) return a.error("bad output batch");
  for (int j = 0; !v8 && j < k; ++j) {
    const int axis = normalized(axes_in[size_t(j)], a.in(first + n + j).rank());
    if (axis < 0 || axis >= a.in(first + n + j).rank()) return a.error("scan_input_axes is out of range");
  }
  for (int j = 0; !v8 && j < m; ++j) {
    const int axis = normalized(axes_out[size_t(j)], a.out(n + j).rank());
    if (axis < 0 || axis >= a.out(n + j).rank()) return a.error("scan_output_axes is out of range");
  }
  for (int64_t b = 0; b < batch; ++b) {
    job.states.clear();
    job.scan_inputs.clear();
    job.in_axes.clear();
    job.scan_outputs.clear();
    job.out_axes.clear();
    std::vector<ir::Tensor> out_views;  // opset 8: one batch entry of each scan output
    for (int i = 0; i < n; ++i) job.states.push_back(v8 ? take(a.in(first + i), 0, b) : a.in(first + i));
    for (int j = 0; j < k; ++j) {
      const ir::Tensor& in = a.in(first + n + j);
      job.scan_inputs.push_back(v8 ? take(in, 0, b) : in);
      job.in_axes.push_back(v8 ? 0 : normalized(axes_in[size_t(j)], in.rank()));
    }
    job.seq = job.scan_inputs[0].dim(job.in_axes[0]);
    for (int j = 0; j < k; ++j)
      if (job.scan_inputs[size_t(j)].dim(job.in_axes[size_t(j)]) != job.seq) return a.error("scan inputs differ in length");
    job.steps = job.seq;
    if (v8 && a.has_in(0)) {
      job.steps = a.in(0).get_int(b);
      if (job.steps < 0 || job.steps > job.seq) return a.error("sequence_lens entry is out of range");
    }
    for (int j = 0; j < m; ++j) out_views.push_back(v8 ? take(a.out(n + j), 0, b) : a.out(n + j));
    for (int j = 0; j < m; ++j) {
      job.scan_outputs.push_back(&out_views[size_t(j)]);
      job.out_axes.push_back(v8 ? 0 : normalized(axes_out[size_t(j)], a.out(n + j).rank()));
    }
    job.in_dirs = dirs_in;
    job.out_dirs = v8 ? std::vector<int64_t>(size_t(m), 0) : dirs_out;
    NFUSE_RETURN_IF_ERROR_PLAIN(run_steps(a, job));
    for (int i = 0; i < n; ++i) {
      ir::Tensor& o = a.out(i);
      if (o.empty()) continue;
      if (v8) put(o, 0, b, job.states[size_t(i)]);
      else if (o.dims() == job.states[size_t(i)].dims() && o.dtype() == job.states[size_t(i)].dtype()) std::memcpy(o.raw(), job.states[size_t(i)].raw(), o.bytes());
      else return a.error("final state " + std::to_string(i) + " does not match the inferred shape");
    }
    for (int j = 0; v8 && j < m; ++j) put(a.out(n + j), 0, b, out_views[size_t(j)]);
  }
  return ok_status();
}

}  // namespace

void register_scan_kernels(KernelRegistry& registry) { registry.add("Scan", scan); }

}  // namespace nfuse::backends::ref
