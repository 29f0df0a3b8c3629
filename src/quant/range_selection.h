// `--method auto`: each activation tensor's 8-bit range chosen among the ranges the calibration
// methods give it (minmax, percentile, mse, sqnr, entropy) by the error that range causes where
// the tensor is read, on the calibration data — AIMET's per-tensor encoding choice, measured on
// the consumer's output rather than on the tensor alone, since a conv that sums many channels
// averages rounding noise but not clipping.
//
// Scoring. For every candidate range r of tensor T (fake-quantized at the activation scheme's
// 8 bits, as the QDQ graph will round it) and every layer reading T, the squared error of that
// reader's output against its output on the float T, divided by the float output's energy; the
// candidate with the smallest sum over readers wins (ties: the earlier candidate, minmax first).
// A reader that is a Conv / Gemm / MatMul with constant weights is run (one-node graph on the
// cpu backend, float weights, so only T's rounding is measured); any other reader (element-wise
// ops, pools, lookups, value-moving ops, a float op) is scored by the error of T itself.
// Everything is a function of the float graph and the calibration batches: the choice does not
// depend on the order of tensors or on what other tensors chose.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/tensor.h"
#include "nfuse/status.h"
#include "quant/observer.h"
#include "quant/quant_plan.h"

namespace nfuse::runtime {
class Session;
}

namespace nfuse::quant {

struct RangeCandidate {
  Method method = Method::kMinMax;
  Range range;
};

// The methods auto chooses among, in tie-break order.
inline constexpr Method kAutoCandidateMethods[] = {Method::kMinMax, Method::kPercentile, Method::kMse, Method::kSqnr,
                                                   Method::kEntropy};

// The distinct ranges of kAutoCandidateMethods on `observer` at `options` (a method whose range
// equals an earlier one's is left out).
Result<std::vector<RangeCandidate>> range_candidates(const Observer& observer, const MethodOptions& options);

class RangeSelector {
 public:
  // `candidates`: tensor -> its candidates (tensors with one candidate need no scoring and are
  // not read). `g` is the float graph the plan was made on; it must outlive the selector.
  static Result<std::unique_ptr<RangeSelector>> create(const ir::Graph& g, const QuantPlan& plan, ActScheme act,
                                                       std::map<std::string, std::vector<RangeCandidate>> candidates,
                                                       int threads);
  ~RangeSelector();

  // The float tensors observe() needs from each calibration batch.
  std::vector<std::string> needed() const;
  // Scores every candidate on one batch; `tensors[name]` holds each needed tensor.
  Status observe(const std::map<std::string, const ir::Tensor*>& tensors);
  // Per tensor: the winning candidate (its index into the tensor's candidates).
  std::map<std::string, size_t> choose() const;
  // Per candidate of `tensor`: its score so far, the sum over readers of (squared error of the
  // reader's output) / (energy of its float output), each summed over every batch observed.
  std::vector<double> scores(const std::string& tensor) const;

 private:
  struct Reader {
    std::unique_ptr<runtime::Session> session;  // null: scored on the tensor itself
    std::string label;
    std::vector<double> error;  // per candidate
    double energy = 0.0;
  };
  struct Scored {
    std::vector<RangeCandidate> candidates;
    std::vector<Reader> readers;
  };
  RangeSelector() = default;

  ActScheme act_ = ActScheme::kU8Asymmetric;
  std::map<std::string, Scored> scored_;
};

}  // namespace nfuse::quant
