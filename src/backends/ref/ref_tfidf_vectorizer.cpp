// Reference TfIdfVectorizer, counting as onnxruntime does: for each skip distance
// s = 1..max_skip_count+1 and each start position, the items at start, start+s, start+2s, ...
// form n-grams of every length in [min_gram_length, max_gram_length]; each pool n-gram found
// counts once. 1-grams are counted in the s = 1 pass only (they do not depend on s).
// TF gives counts, IDF gives weight (1 without weights) where the count is non-zero, TFIDF
// count * weight; weights are indexed by output position.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

Status tfidf_vectorizer(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  const auto& attrs = a.attrs();
  const std::vector<int64_t> counts = attrs.get_ints("ngram_counts");
  const std::vector<int64_t> indexes = attrs.get_ints("ngram_indexes");
  const std::vector<int64_t> pool = attrs.get_ints("pool_int64s");
  const std::vector<float> weights = attrs.get_floats("weights");
  const std::string mode = attrs.get_string("mode", "TF");
  const int64_t min_n = attrs.get_int("min_gram_length", 1), max_n = attrs.get_int("max_gram_length", 1);
  const int64_t max_skip = attrs.get_int("max_skip_count", 0);
  // n-gram -> output index, for every length in the pool (verify checked the layout).
  std::map<std::vector<int64_t>, int64_t> grams;
  size_t next = 0;
  for (size_t n = 0; n < counts.size(); ++n) {
    const size_t end = n + 1 < counts.size() ? static_cast<size_t>(counts[n + 1]) : pool.size();
    for (size_t p = static_cast<size_t>(counts[n]); p + n < end && next < indexes.size(); p += n + 1) {
      grams[std::vector<int64_t>(pool.begin() + static_cast<std::ptrdiff_t>(p),
                                 pool.begin() + static_cast<std::ptrdiff_t>(p + n + 1))] = indexes[next++];
    }
  }
  const int64_t rows = x.rank() == 2 ? x.dim(0) : 1;
  const int64_t row_size = x.rank() == 2 ? x.dim(1) : x.numel();
  const int64_t width = y.rank() >= 1 ? y.dim(y.rank() - 1) : 0;
  if (y.dtype() != ir::DType::kF32 || y.numel() != rows * width) return a.error("output does not match the input rows");
  float* out = y.data<float>();
  std::fill(out, out + y.numel(), 0.0f);  // arena outputs arrive uninitialised
  std::vector<int64_t> gram;
  for (int64_t r = 0; r < rows; ++r) {
    float* row_out = out + r * width;
    for (int64_t skip = 1; skip <= max_skip + 1; ++skip) {
      const int64_t first_n = (skip > 1 && min_n == 1) ? 2 : min_n;
      for (int64_t start = 0; start < row_size; ++start) {
        gram.clear();
        for (int64_t n = 1, pos = start; n <= max_n && pos < row_size; ++n, pos += skip) {
          gram.push_back(x.get_int(r * row_size + pos));
          if (n < first_n) continue;
          auto it = grams.find(gram);
          if (it != grams.end() && it->second < width) row_out[it->second] += 1.0f;
        }
      }
    }
    for (int64_t i = 0; i < width; ++i) {
      const float w = weights.empty() ? 1.0f : weights[static_cast<size_t>(i)];
      if (mode == "IDF") row_out[i] = row_out[i] > 0 ? w : 0.0f;
      else if (mode == "TFIDF") row_out[i] *= w;
    }
  }
  return ok_status();
}

}  // namespace

void register_tfidf_vectorizer_kernels(KernelRegistry& registry) { registry.add("TfIdfVectorizer", tfidf_vectorizer); }

}  // namespace nfuse::backends::ref
