// RNN, GRU and LSTM: one-layer recurrences over a sequence. They differ only in the number of
// gates, of activations per direction and of optional inputs/outputs, so one schema serves all.
//   X [seq, batch, input] (layout 1: [batch, seq, input]); W [dirs, G*hidden, input];
//   R [dirs, G*hidden, hidden]; B [dirs, 2*G*hidden]; sequence_lens [batch];
//   initial_h / initial_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]); P [dirs, 3*hidden].
//   Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]); Y_h / Y_c like initial_h.
#include <algorithm>
#include <array>
#include <cctype>

#include "ops/builtin_ops.h"
#include "ops/op_helpers.h"

namespace nfuse::ops {
namespace {

struct RnnKind {
  int gates;            // G: weight blocks stacked in W and R
  int acts_per_dir;     // activations per direction
};

RnnKind kind_of(const ir::Node& node) {
  if (node.op_type == "LSTM") return {4, 3};
  if (node.op_type == "GRU") return {3, 2};
  return {1, 1};
}

bool known_activation(std::string name) {
  static const std::array<const char*, 11> kNames = {"relu",      "tanh",       "sigmoid", "affine",
                                                     "leakyrelu", "thresholdedrelu", "scaledtanh",
                                                     "hardsigmoid", "elu",     "softsign", "softplus"};
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  return std::find(kNames.begin(), kNames.end(), name) != kNames.end();
}

int directions_of(const ir::Node& node) {
  return node.attrs.get_string("direction", "forward") == "bidirectional" ? 2 : 1;
}

Status verify_rnn(const ir::Node& node) {
  const std::string dir = node.attrs.get_string("direction", "forward");
  if (dir != "forward" && dir != "reverse" && dir != "bidirectional") {
    return invalid_model(node.label() + ": unknown direction '" + dir + "'");
  }
  const int64_t layout = node.attrs.get_int("layout", 0);
  if (layout != 0 && layout != 1) return invalid_model(node.label() + ": layout must be 0 or 1");
  if (node.attrs.has("hidden_size") && node.attrs.get_int("hidden_size", 0) <= 0) {
    return invalid_model(node.label() + ": hidden_size must be positive");
  }
  if (node.attrs.has("clip") && !(node.attrs.get_float("clip", 0.0f) > 0.0f)) {
    return invalid_model(node.label() + ": clip must be positive");
  }
  const RnnKind kind = kind_of(node);
  const auto acts = node.attrs.get_strings("activations");
  if (!acts.empty()) {
    const size_t per = static_cast<size_t>(kind.acts_per_dir);
    const size_t dirs = static_cast<size_t>(directions_of(node));
    // A single direction's list is accepted for bidirectional and used for both directions.
    if (acts.size() != per * dirs && acts.size() != per) {
      return invalid_model(node.label() + ": expected " + std::to_string(per * dirs) + " activations, got " +
                           std::to_string(acts.size()));
    }
    for (const auto& a : acts)
      if (!known_activation(a)) return unsupported(node.label() + ": unknown activation '" + a + "'");
  }
  if (node.op_type == "LSTM") {
    const int64_t input_forget = node.attrs.get_int("input_forget", 0);
    if (input_forget != 0 && input_forget != 1) return invalid_model(node.label() + ": input_forget must be 0 or 1");
  }
  return ok_status();
}

// Checks dim `i` of input `input` equals `want` when both are static.
Status check_dim(const ir::InferContext& ctx, int input, int i, const ir::Dim& want, const char* what) {
  if (!ctx.has_input(input) || !ctx.shape(input).rank_known() || !want.is_static()) return ok_status();
  const ir::Dim& got = ctx.shape(input)[i];
  if (got.is_static() && got.value != want.value) {
    return ctx.error(std::string(what) + " is " + std::to_string(got.value) + ", expected " +
                     std::to_string(want.value));
  }
  return ok_status();
}

Status check_rank(const ir::InferContext& ctx, int input, int rank, const char* name) {
  if (!ctx.has_input(input) || !ctx.shape(input).rank_known()) return ok_status();
  if (ctx.shape(input).rank() != rank) {
    return ctx.error(std::string(name) + " must have rank " + std::to_string(rank) + ", got " +
                     ctx.shape(input).to_string());
  }
  return ok_status();
}

ir::Dim dim_or_unknown(const ir::InferContext& ctx, int input, int i) {
  if (!ctx.has_input(input) || !ctx.shape(input).rank_known()) return ir::Dim();
  return ctx.shape(input)[i];
}

// d * k, unknown when d is or when the product overflows (a hostile file's dims).
ir::Dim mul(const ir::Dim& d, int64_t k) {
  int64_t product = 0;
  if (!d.is_static() || __builtin_mul_overflow(d.value, k, &product)) return ir::Dim();
  return ir::Dim(product);
}

Status check_dtypes(const ir::InferContext& ctx) {
  if (!ir::dtype_is_float(ctx.dtype(0))) {
    return ctx.error("X must be a float tensor, got " + std::string(ir::dtype_name(ctx.dtype(0))));
  }
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!ctx.has_input(i)) continue;
    if (i == 4) {
      if (!ir::dtype_is_integer(ctx.dtype(i))) return ctx.error("sequence_lens must be an integer tensor");
    } else if (ctx.dtype(i) != ctx.dtype(0)) {
      return ctx.error("input " + std::to_string(i) + " is " + std::string(ir::dtype_name(ctx.dtype(i))) +
                       " but X is " + std::string(ir::dtype_name(ctx.dtype(0))));
    }
  }
  return ok_status();
}

Status infer_rnn(ir::InferContext& ctx) {
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dtypes(ctx));
  const RnnKind kind = kind_of(ctx.node);
  const int64_t dirs = directions_of(ctx.node);
  const bool batch_major = ctx.attrs().get_int("layout", 0) == 1;
  NFUSE_RETURN_IF_ERROR_PLAIN(check_rank(ctx, 0, 3, "X"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_rank(ctx, 1, 3, "W"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_rank(ctx, 2, 3, "R"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_rank(ctx, 3, 2, "B"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_rank(ctx, 4, 1, "sequence_lens"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_rank(ctx, 5, 3, "initial_h"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_rank(ctx, 6, 3, "initial_c"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_rank(ctx, 7, 2, "P"));

  ir::Dim hidden = ctx.attrs().has("hidden_size") ? ir::Dim(ctx.attrs().get_int("hidden_size", 0))
                                                  : dim_or_unknown(ctx, 2, 2);
  const ir::Dim seq = dim_or_unknown(ctx, 0, batch_major ? 1 : 0);
  const ir::Dim batch = dim_or_unknown(ctx, 0, batch_major ? 0 : 1);
  const ir::Dim input_size = dim_or_unknown(ctx, 0, 2);
  const int64_t g = kind.gates;
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 1, 0, dirs, "W dim 0 (directions)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 1, 1, mul(hidden, g), "W dim 1 (gates*hidden)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 1, 2, input_size, "W dim 2 (input size)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 2, 0, dirs, "R dim 0 (directions)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 2, 1, mul(hidden, g), "R dim 1 (gates*hidden)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 2, 2, hidden, "R dim 2 (hidden)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 3, 0, dirs, "B dim 0 (directions)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 3, 1, mul(hidden, 2 * g), "B dim 1 (2*gates*hidden)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 4, 0, batch, "sequence_lens length"));
  for (int state = 5; state <= 6; ++state) {
    NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, state, batch_major ? 1 : 0, dirs, "initial state directions"));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, state, batch_major ? 0 : 1, batch, "initial state batch"));
    NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, state, 2, hidden, "initial state hidden"));
  }
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 7, 0, dirs, "P dim 0 (directions)"));
  NFUSE_RETURN_IF_ERROR_PLAIN(check_dim(ctx, 7, 1, mul(hidden, 3), "P dim 1 (3*hidden)"));

  const ir::DType dt = ctx.dtype(0);
  const ir::Dim d(dirs);
  if (ctx.num_outputs() > 0) {
    ctx.output(0) = {dt, batch_major ? ir::Shape({batch, seq, d, hidden}) : ir::Shape({seq, d, batch, hidden})};
  }
  for (int i = 1; i < ctx.num_outputs(); ++i) {
    ctx.output(i) = {dt, batch_major ? ir::Shape({batch, d, hidden}) : ir::Shape({d, batch, hidden})};
  }
  return ok_status();
}

}  // namespace

void register_rnn_ops(ir::OpRegistry& registry) {
  registry.add(ir::OpSchema{.op_type = "RNN",
                            .min_inputs = 3,
                            .max_inputs = 6,
                            .min_outputs = 0,
                            .max_outputs = 2,
                            .verify = verify_rnn,
                            .infer = infer_rnn});
  registry.add(ir::OpSchema{.op_type = "GRU",
                            .min_inputs = 3,
                            .max_inputs = 6,
                            .min_outputs = 0,
                            .max_outputs = 2,
                            .verify = verify_rnn,
                            .infer = infer_rnn});
  registry.add(ir::OpSchema{.op_type = "LSTM",
                            .min_inputs = 3,
                            .max_inputs = 8,
                            .min_outputs = 0,
                            .max_outputs = 3,
                            .verify = verify_rnn,
                            .infer = infer_rnn});
}

}  // namespace nfuse::ops
