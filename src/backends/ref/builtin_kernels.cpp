#include "backends/ref/builtin_kernels.h"

namespace nfuse::backends::ref {

void register_builtin_kernels(KernelRegistry& registry) {
  register_activation_kernels(registry);
  register_binary_kernels(registry);
  register_cast_kernels(registry);
  register_concat_split_kernels(registry);
  register_control_flow_kernels(registry);
  register_conv_kernels(registry);
  register_conv_transpose_kernels(registry);
  register_cumsum_kernels(registry);
  register_det_kernels(registry);
  register_einsum_kernels(registry);
  register_expand_tile_kernels(registry);
  register_gather_kernels(registry);
  register_gelu_kernels(registry);
  register_dynamic_quant_matmul_kernels(registry);
  register_generators_kernels(registry);
  register_grid_sample_kernels(registry);
  register_identity_kernels(registry);
  register_logical_kernels(registry);
  register_loop_kernels(registry);
  register_loss_kernels(registry);
  register_matmul_kernels(registry);
  register_matmul_nbits_kernels(registry);
  register_non_max_suppression_kernels(registry);
  register_normalization_kernels(registry);
  register_pad_kernels(registry);
  register_pool_kernels(registry);
  register_qlinear16_kernels(registry);
  register_qlinear_region_kernels(registry);
  register_qlinear_binary_kernels(registry);
  register_qlinear_concat_kernels(registry);
  register_qlinear_contrib_kernels(registry);
  register_qlinear_lookup_kernels(registry);
  register_qlinear_pool_kernels(registry);
  register_quantize_kernels(registry);
  register_reduce_kernels(registry);
  register_reshape_kernels(registry);
  register_resize_kernels(registry);
  register_rnn_kernels(registry);
  register_roi_align_kernels(registry);
  register_scan_kernels(registry);
  register_scatter_kernels(registry);
  register_select_kernels(registry);
  register_shape_ops_kernels(registry);
  register_signal_kernels(registry);
  register_slice_kernels(registry);
  register_softmax_kernels(registry);
  register_tfidf_vectorizer_kernels(registry);
  register_topk_kernels(registry);
  register_transpose_kernels(registry);
  register_trilu_reverse_kernels(registry);
  register_unary_kernels(registry);
  register_unique_kernels(registry);
}

}  // namespace nfuse::backends::ref
