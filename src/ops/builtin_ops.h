// Every op schema nfuse knows, registered explicitly rather than from static initialisers (which
// a static archive drops). Each source file of src/ops that defines ops has one function here;
// register_builtin_ops calls them all.
#pragma once

#include "ir/op_registry.h"

namespace nfuse::ops {

// Adds every built-in op schema to `registry`.
void register_builtin_ops(ir::OpRegistry& registry);

void register_activation_ops(ir::OpRegistry& registry);
void register_binary_ops(ir::OpRegistry& registry);
void register_cast_ops(ir::OpRegistry& registry);
void register_concat_split_ops(ir::OpRegistry& registry);
void register_control_flow_ops(ir::OpRegistry& registry);
void register_conv_ops(ir::OpRegistry& registry);
void register_cumsum_ops(ir::OpRegistry& registry);
void register_det_ops(ir::OpRegistry& registry);
void register_einsum_ops(ir::OpRegistry& registry);
void register_expand_tile_ops(ir::OpRegistry& registry);
void register_gather_ops(ir::OpRegistry& registry);
void register_gelu_ops(ir::OpRegistry& registry);
void register_dynamic_quant_matmul_ops(ir::OpRegistry& registry);
void register_generators_ops(ir::OpRegistry& registry);
void register_grid_sample_ops(ir::OpRegistry& registry);
void register_identity_ops(ir::OpRegistry& registry);
void register_logical_ops(ir::OpRegistry& registry);
void register_loop_ops(ir::OpRegistry& registry);
void register_loss_ops(ir::OpRegistry& registry);
void register_matmul_nbits_ops(ir::OpRegistry& registry);
void register_matmul_ops(ir::OpRegistry& registry);
void register_non_max_suppression_ops(ir::OpRegistry& registry);
void register_normalization_ops(ir::OpRegistry& registry);
void register_pad_ops(ir::OpRegistry& registry);
void register_pool_ops(ir::OpRegistry& registry);
void register_qlinear16_ops(ir::OpRegistry& registry);
void register_qlinear_binary_concat_pool_ops(ir::OpRegistry& registry);
void register_qlinear_contrib_ops(ir::OpRegistry& registry);
void register_qlinear_lookup_ops(ir::OpRegistry& registry);
void register_qlinear_region_ops(ir::OpRegistry& registry);
void register_qlinear_conv_region_ops(ir::OpRegistry& registry);
void register_quantize_ops(ir::OpRegistry& registry);
void register_reduce_ops(ir::OpRegistry& registry);
void register_reshape_ops(ir::OpRegistry& registry);
void register_resize_ops(ir::OpRegistry& registry);
void register_rnn_ops(ir::OpRegistry& registry);
void register_roi_align_ops(ir::OpRegistry& registry);
void register_scan_ops(ir::OpRegistry& registry);
void register_scatter_ops(ir::OpRegistry& registry);
void register_select_ops(ir::OpRegistry& registry);
void register_shape_ops(ir::OpRegistry& registry);
void register_signal_ops(ir::OpRegistry& registry);
void register_slice_ops(ir::OpRegistry& registry);
void register_softmax_ops(ir::OpRegistry& registry);
void register_space_depth_ops(ir::OpRegistry& registry);
void register_tfidf_vectorizer_ops(ir::OpRegistry& registry);
void register_topk_ops(ir::OpRegistry& registry);
void register_transpose_ops(ir::OpRegistry& registry);
void register_trilu_reverse_ops(ir::OpRegistry& registry);
void register_unary_ops(ir::OpRegistry& registry);
void register_unique_ops(ir::OpRegistry& registry);

}  // namespace nfuse::ops
