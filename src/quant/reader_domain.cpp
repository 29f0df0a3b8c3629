#include "quant/reader_domain.h"

#include <algorithm>
#include <limits>
#include <set>
#include <unordered_map>
#include <vector>

#include "backends/ref/interpreter.h"

namespace nfuse::quant {
namespace {

// The region of lookup layer `l` applied to `x` (the grid along axis 2 of a [1, 1, N, 1...]
// tensor of the input's rank, or [N]), as rows of N values: one row, or one per channel where
// per-channel constants (activation equalization's) broadcast the grid over axis 1. nullopt when
// a node fails or the outputs are not whole rows.
std::optional<std::vector<float>> evaluate_region(const ir::Graph& g, const PlannedLayer& l, const ir::Tensor& x) {
  const auto& evaluate = backends::ref::node_evaluator();
  std::unordered_map<const ir::Value*, ir::Tensor> values;
  const ir::Value* root = g.find_value(l.inputs[0]);
  const ir::Value* last = nullptr;
  for (const std::string& out : l.region) {
    const ir::Value* v = g.find_value(out);
    if (!v || !v->producer) return std::nullopt;
    const ir::Node& n = *v->producer;
    std::vector<const ir::Tensor*> in;
    for (const ir::Value* i : n.inputs) {
      if (!i)
        in.push_back(nullptr);
      else if (i == root)
        in.push_back(&x);
      else if (i->constant)
        in.push_back(&*i->constant);
      else if (values.count(i))
        in.push_back(&values.at(i));
      else
        return std::nullopt;  // an input from outside the region
    }
    auto outs = evaluate(n, in);
    if (!outs.ok() || outs->empty() || (*outs)[0].numel() % x.numel() != 0 || (*outs)[0].dtype() != ir::DType::kF32)
      return std::nullopt;
    values[n.output(0)] = std::move((*outs)[0]);
    last = n.output(0);
  }
  if (!last) return std::nullopt;
  const ir::Tensor& y = values.at(last);
  return std::vector<float>(y.data<float>(), y.data<float>() + y.numel());
}

// The lookup layers reading `tensor`, or none unless they are all its readers.
std::vector<const PlannedLayer*> lookup_readers(const ir::Graph& g, const QuantPlan& plan, const std::string& tensor) {
  const ir::Value* v = g.find_value(tensor);
  if (!v || v->is_graph_output || v->consumers.empty()) return {};
  std::vector<const PlannedLayer*> readers;
  std::set<const ir::Node*> covered;
  for (const PlannedLayer& l : plan.layers) {
    if (l.kind != LayerKind::kLookup || l.inputs.empty() || l.inputs[0] != tensor) continue;
    readers.push_back(&l);
    for (const std::string& out : l.region) {
      if (const ir::Value* r = g.find_value(out)) covered.insert(r->producer);
    }
  }
  for (const ir::Node* c : v->consumers) {
    if (!covered.count(c)) return {};
  }
  return readers;
}

}  // namespace

std::optional<Range> reader_domain(const ir::Graph& g, const QuantPlan& plan, const std::string& tensor,
                                   Range observed) {
  const std::vector<const PlannedLayer*> readers = lookup_readers(g, plan, tensor);
  if (readers.empty() || !(observed.min < observed.max)) return std::nullopt;
  const ir::Value* v = g.find_value(tensor);
  // Per-channel constants are [1, C, 1...]: the grid runs along axis 2 so they spread it over C.
  const ir::Shape& shape = v->type.shape;
  std::vector<int64_t> dims = {kReaderDomainPoints};
  if (shape.rank_known() && shape.rank() >= 3) {
    dims.assign(static_cast<size_t>(shape.rank()), 1);
    dims[2] = kReaderDomainPoints;
  }
  ir::Tensor x = ir::Tensor::allocate(ir::DType::kF32, dims);
  const double step = (static_cast<double>(observed.max) - observed.min) / (kReaderDomainPoints - 1);
  for (int k = 0; k < kReaderDomainPoints; ++k) {
    x.data<float>()[k] = k == kReaderDomainPoints - 1 ? observed.max : static_cast<float>(observed.min + k * step);
  }
  int lo = kReaderDomainPoints - 1, hi = 0;  // the grid points some channel of some reader needs
  for (const PlannedLayer* l : readers) {
    const auto y = evaluate_region(g, *l, x);
    if (!y) return std::nullopt;
    for (size_t row = 0; row < y->size(); row += kReaderDomainPoints) {
      const float* f = y->data() + row;
      int a = 0, b = kReaderDomainPoints - 1;
      while (a + 1 < kReaderDomainPoints && f[a + 1] == f[0]) ++a;
      while (b > 0 && f[b - 1] == f[kReaderDomainPoints - 1]) --b;
      if (a >= b) continue;  // constant over the whole range: the channel tells nothing apart
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
  }
  if (lo >= hi || (lo == 0 && hi == kReaderDomainPoints - 1)) return std::nullopt;
  // One 8-bit step of margin past each cut: a u8 zero point rounds the lowest code's value up
  // to half a step inside the range, and a bound inside the varying part would map every
  // value beyond it wrongly (HardSigmoid(-2.99) is 0.0017, not 0).
  const float first_kept = x.data<float>()[lo], last_kept = x.data<float>()[hi];
  const float margin = (last_kept - first_kept) / 255.0f;
  // A side without a constant tail stays open, so a range with headroom past the observed one
  // (int16's) keeps it there.
  constexpr float kInf = std::numeric_limits<float>::infinity();
  return Range{lo == 0 ? -kInf : std::max(observed.min, first_kept - margin),
               hi == kReaderDomainPoints - 1 ? kInf : std::min(observed.max, last_kept + margin)};
}

}  // namespace nfuse::quant
