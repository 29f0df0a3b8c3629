#include "ops/builtin_ops.h"

namespace nfuse::ops {

void register_builtin_ops(ir::OpRegistry& registry) {
  register_activation_ops(registry);
  register_binary_ops(registry);
  register_cast_ops(registry);
  register_concat_split_ops(registry);
  register_control_flow_ops(registry);
  register_conv_ops(registry);
  register_cumsum_ops(registry);
  register_det_ops(registry);
  register_einsum_ops(registry);
  register_expand_tile_ops(registry);
  register_gather_ops(registry);
  register_gelu_ops(registry);
  register_dynamic_quant_matmul_ops(registry);
  register_generators_ops(registry);
  register_grid_sample_ops(registry);
  register_identity_ops(registry);
  register_logical_ops(registry);
  register_loop_ops(registry);
  register_loss_ops(registry);
  register_matmul_nbits_ops(registry);
  register_matmul_ops(registry);
  register_non_max_suppression_ops(registry);
  register_normalization_ops(registry);
  register_pad_ops(registry);
  register_pool_ops(registry);
  register_qlinear16_ops(registry);
  register_qlinear_binary_concat_pool_ops(registry);
  register_qlinear_contrib_ops(registry);
  register_qlinear_lookup_ops(registry);
  register_qlinear_region_ops(registry);
  register_qlinear_conv_region_ops(registry);
  register_quantize_ops(registry);
  register_reduce_ops(registry);
  register_reshape_ops(registry);
  register_resize_ops(registry);
  register_rnn_ops(registry);
  register_roi_align_ops(registry);
  register_scan_ops(registry);
  register_scatter_ops(registry);
  register_select_ops(registry);
  register_shape_ops(registry);
  register_signal_ops(registry);
  register_slice_ops(registry);
  register_softmax_ops(registry);
  register_space_depth_ops(registry);
  register_tfidf_vectorizer_ops(registry);
  register_topk_ops(registry);
  register_transpose_ops(registry);
  register_trilu_reverse_ops(registry);
  register_unary_ops(registry);
  register_unique_ops(registry);
}

}  // namespace nfuse::ops
