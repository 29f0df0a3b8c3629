// Einsum: equation parsing and shape inference (kernel: backends/ref/ref_einsum.cpp).
#include "ops/einsum.h"
#include "ops/builtin_ops.h"

#include <algorithm>
#include <string>

#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

constexpr int kLetters = 52;

int letter_id(char c) {
  if (c >= 'a' && c <= 'z') return c - 'a';
  if (c >= 'A' && c <= 'Z') return 26 + (c - 'A');
  return -1;
}

// One term ("ab...c") as letter ids with -2 marking the ellipsis; kInvalidModel otherwise.
Result<std::vector<int>> parse_term(std::string_view term) {
  std::vector<int> out;
  bool ellipsis = false;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term.substr(i, 3) == "...") {
      if (ellipsis) return invalid_model("einsum term '" + std::string(term) + "' has two ellipses");
      ellipsis = true;
      out.push_back(-2);
      i += 2;
      continue;
    }
    const int id = letter_id(term[i]);
    if (id < 0) return invalid_model("einsum equation has invalid character '" + std::string(1, term[i]) + "'");
    out.push_back(id);
  }
  return out;
}

// Replaces the ellipsis of `term` by the labels of `count` broadcast dims right-aligned in `total`.
std::vector<int> expand(const std::vector<int>& term, int count, int total) {
  std::vector<int> out;
  for (int id : term) {
    if (id != -2) {
      out.push_back(id);
      continue;
    }
    for (int k = total - count; k < total; ++k) out.push_back(kLetters + k);
  }
  return out;
}

}  // namespace

Result<EinsumSpec> parse_einsum(std::string_view equation, const std::vector<int>& input_ranks) {
  std::string eq;
  for (char c : equation)
    if (c != ' ') eq += c;
  const size_t arrow = eq.find("->");
  const std::string lhs = eq.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    NFUSE_ASSIGN_OR_RETURN(std::vector<int> t, parse_term(std::string_view(lhs).substr(start, comma - start)));
    terms.push_back(std::move(t));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  if (terms.size() != input_ranks.size()) {
    return invalid_model("einsum equation has " + std::to_string(terms.size()) + " operands, node has " +
                         std::to_string(input_ranks.size()));
  }
  int ellipsis_dims = 0;
  std::vector<int> counts(terms.size());
  for (size_t i = 0; i < terms.size(); ++i) {
    const int letters = static_cast<int>(std::count_if(terms[i].begin(), terms[i].end(), [](int id) { return id >= 0; }));
    const bool has_ellipsis = letters != static_cast<int>(terms[i].size());
    counts[i] = input_ranks[i] - letters;
    if (counts[i] < 0 || (!has_ellipsis && counts[i] != 0)) {
      return invalid_model("einsum operand " + std::to_string(i) + " has rank " + std::to_string(input_ranks[i]) +
                           " but its term names " + std::to_string(letters) + " dims");
    }
    ellipsis_dims = std::max(ellipsis_dims, counts[i]);
  }
  EinsumSpec spec;
  spec.num_labels = kLetters + ellipsis_dims;
  for (size_t i = 0; i < terms.size(); ++i) spec.inputs.push_back(expand(terms[i], counts[i], ellipsis_dims));
  if (arrow != std::string::npos) {
    NFUSE_ASSIGN_OR_RETURN(std::vector<int> out, parse_term(std::string_view(eq).substr(arrow + 2)));
    spec.output = expand(out, ellipsis_dims, ellipsis_dims);
  } else {
    for (int k = 0; k < ellipsis_dims; ++k) spec.output.push_back(kLetters + k);
    std::vector<int> uses(kLetters, 0);
    for (const auto& t : spec.inputs)
      for (int id : t)
        if (id < kLetters) ++uses[static_cast<size_t>(id)];
    // Alphabetical order: upper case sorts before lower case in ASCII.
    for (int id = 26; id < kLetters; ++id)
      if (uses[static_cast<size_t>(id)] == 1) spec.output.push_back(id);
    for (int id = 0; id < 26; ++id)
      if (uses[static_cast<size_t>(id)] == 1) spec.output.push_back(id);
  }
  std::vector<bool> seen(static_cast<size_t>(spec.num_labels), false);
  for (const auto& t : spec.inputs)
    for (int id : t) seen[static_cast<size_t>(id)] = true;
  std::vector<bool> in_output(static_cast<size_t>(spec.num_labels), false);
  for (int id : spec.output) {
    if (!seen[static_cast<size_t>(id)]) return invalid_model("einsum output label is not in any operand");
    if (in_output[static_cast<size_t>(id)]) return invalid_model("einsum output repeats a label");
    in_output[static_cast<size_t>(id)] = true;
  }
  return spec;
}

Result<std::vector<int64_t>> einsum_label_sizes(const EinsumSpec& spec,
                                                const std::vector<std::vector<int64_t>>& input_dims) {
  std::vector<int64_t> sizes(static_cast<size_t>(spec.num_labels), -1);
  for (size_t i = 0; i < spec.inputs.size(); ++i) {
    for (size_t d = 0; d < spec.inputs[i].size(); ++d) {
      const int id = spec.inputs[i][d];
      int64_t& s = sizes[static_cast<size_t>(id)];
      const int64_t v = input_dims[i][d];
      const bool broadcastable = id >= kLetters;
      if (s < 0 || (broadcastable && s == 1)) s = v;
      else if (v != s && !(broadcastable && v == 1)) {
        return invalid_model("einsum label sizes differ: " + std::to_string(s) + " vs " + std::to_string(v));
      }
    }
  }
  return sizes;
}

namespace {

Status verify_einsum(const ir::Node& node) {
  if (!node.attrs.has("equation")) return invalid_model(node.label() + ": attribute 'equation' is required");
  return ok_status();
}

Status infer_einsum(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_same_dtype(ctx, 0, ctx.num_inputs() - 1));
  std::vector<int> ranks;
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    if (!ctx.shape(i).rank_known()) {
      ctx.output(0) = {ctx.dtype(0), ir::Shape::unknown_rank()};
      return ok_status();
    }
    ranks.push_back(ctx.shape(i).rank());
  }
  auto spec = parse_einsum(ctx.attrs().get_string("equation", ""), ranks);
  if (!spec.ok()) return ctx.error(spec.status().message());
  std::vector<std::vector<int64_t>> static_dims;
  for (int i = 0; i < ctx.num_inputs(); ++i)
    if (auto d = ctx.shape(i).static_dims()) static_dims.push_back(*d);
  if (static_cast<int>(static_dims.size()) == ctx.num_inputs()) {
    auto sizes = einsum_label_sizes(*spec, static_dims);
    if (!sizes.ok()) return ctx.error(sizes.status().message());
    std::vector<int64_t> out;
    for (int id : spec->output) out.push_back((*sizes)[static_cast<size_t>(id)]);
    ctx.output(0) = {ctx.dtype(0), ir::Shape::from_dims(out)};
    return ok_status();
  }
  // Per label: a static size other than 1 wins (1 may be a broadcast ellipsis dim).
  std::vector<ir::Dim> label(static_cast<size_t>(spec->num_labels), ir::Dim(1));
  std::vector<bool> known(static_cast<size_t>(spec->num_labels), true);
  for (int i = 0; i < ctx.num_inputs(); ++i) {
    for (size_t d = 0; d < spec->inputs[static_cast<size_t>(i)].size(); ++d) {
      const auto id = static_cast<size_t>(spec->inputs[static_cast<size_t>(i)][d]);
      const ir::Dim& dim = ctx.shape(i)[static_cast<int>(d)];
      if (!dim.is_static()) known[id] = false;
      else if (dim.value != 1) label[id] = dim;
    }
  }
  std::vector<ir::Dim> out;
  for (int id : spec->output) {
    const auto i = static_cast<size_t>(id);
    out.push_back(label[i].value != 1 || known[i] ? label[i] : ir::Dim());
  }
  ctx.output(0) = {ctx.dtype(0), ir::Shape(std::move(out))};
  return ok_status();
}

}  // namespace

void register_einsum_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{
      .op_type = "Einsum", .min_inputs = 1, .max_inputs = 64, .verify = verify_einsum, .infer = infer_einsum});
}

}  // namespace nfuse::ops
