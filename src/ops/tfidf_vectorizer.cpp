// TfIdfVectorizer (int inputs; the IR has no string tensors): counts the n-grams of a pool in
// each row of X ([C] or [N, C]) into [max(ngram_indexes) + 1] or [N, that] floats. The pool
// holds the 1-grams, then the 2-grams, ... each length starting at ngram_counts[n - 1].
#include <algorithm>
#include <string>
#include <vector>

#include "ops/builtin_ops.h"
#include "ops/elementwise_util.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

Status verify_tfidf(const ir::Node& node) {
  const auto& attrs = node.attrs;
  const std::string mode = attrs.get_string("mode", "");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF") return invalid_model(node.label() + ": mode must be TF, IDF or TFIDF");
  if (!attrs.get_strings("pool_strings").empty()) {
    return unsupported(node.label() + ": string pools need string tensors, which nfuse does not have");
  }
  const int64_t min_n = attrs.get_int("min_gram_length", 0), max_n = attrs.get_int("max_gram_length", 0);
  const std::vector<int64_t> counts = attrs.get_ints("ngram_counts");
  const std::vector<int64_t> indexes = attrs.get_ints("ngram_indexes");
  const std::vector<int64_t> pool = attrs.get_ints("pool_int64s");
  if (min_n < 1 || max_n < min_n) return invalid_model(node.label() + ": need 1 <= min_gram_length <= max_gram_length");
  if (attrs.get_int("max_skip_count", 0) < 0) return invalid_model(node.label() + ": max_skip_count must be >= 0");
  if (indexes.empty()) return invalid_model(node.label() + ": ngram_indexes is empty");
  for (int64_t i : indexes)
    if (i < 0) return invalid_model(node.label() + ": ngram_indexes must not be negative");
  // Every length's block must start inside the pool, in order, and hold whole n-grams.
  int64_t total = 0;
  for (size_t n = 0; n < counts.size(); ++n) {
    const int64_t begin = counts[n];
    const int64_t end = n + 1 < counts.size() ? counts[n + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) ||
        (end - begin) % static_cast<int64_t>(n + 1) != 0) {
      return invalid_model(node.label() + ": ngram_counts does not split pool_int64s into whole n-grams");
    }
    total += (end - begin) / static_cast<int64_t>(n + 1);
  }
  if (total != static_cast<int64_t>(indexes.size())) {
    return invalid_model(node.label() + ": ngram_indexes has " + std::to_string(indexes.size()) +
                         " entries but the pool holds " + std::to_string(total) + " n-grams");
  }
  const std::vector<float> weights = attrs.get_floats("weights");
  if (!weights.empty() && weights.size() < static_cast<size_t>(*std::max_element(indexes.begin(), indexes.end()) + 1)) {
    return invalid_model(node.label() + ": weights is shorter than the output");
  }
  return ok_status();
}

Status infer_tfidf(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(require_dtype(ctx, 0, dtype_bit(ir::DType::kI32) | dtype_bit(ir::DType::kI64)));
  const std::vector<int64_t> indexes = ctx.attrs().get_ints("ngram_indexes");
  const int64_t width = indexes.empty() ? 0 : *std::max_element(indexes.begin(), indexes.end()) + 1;
  const ir::Shape& x = ctx.shape(0);
  ctx.output(0).dtype = ir::DType::kF32;
  if (!x.rank_known()) {
    ctx.output(0).shape = ir::Shape::unknown_rank();
  } else if (x.rank() == 1) {
    ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>{width});
  } else if (x.rank() == 2) {
    ctx.output(0).shape = ir::Shape(std::vector<ir::Dim>{x[0], width});
  } else {
    return ctx.error("input must be [C] or [N, C]");
  }
  return ok_status();
}

}  // namespace

void register_tfidf_vectorizer_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "TfIdfVectorizer", .verify = verify_tfidf, .infer = infer_tfidf});
}

}  // namespace nfuse::ops
