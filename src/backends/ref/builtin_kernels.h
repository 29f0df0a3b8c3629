// Every reference kernel, registered explicitly rather than from static initialisers (which a
// static archive drops). Each source file of src/backends/ref that defines kernels has one
// function here; register_builtin_kernels calls them all.
#pragma once

#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {

// Adds every reference kernel to `registry`.
void register_builtin_kernels(KernelRegistry& registry);

void register_activation_kernels(KernelRegistry& registry);
void register_binary_kernels(KernelRegistry& registry);
void register_cast_kernels(KernelRegistry& registry);
void register_concat_split_kernels(KernelRegistry& registry);
void register_control_flow_kernels(KernelRegistry& registry);
void register_conv_kernels(KernelRegistry& registry);
void register_conv_transpose_kernels(KernelRegistry& registry);
void register_cumsum_kernels(KernelRegistry& registry);
void register_det_kernels(KernelRegistry& registry);
void register_einsum_kernels(KernelRegistry& registry);
void register_expand_tile_kernels(KernelRegistry& registry);
void register_gather_kernels(KernelRegistry& registry);
void register_gelu_kernels(KernelRegistry& registry);
void register_dynamic_quant_matmul_kernels(KernelRegistry& registry);
void register_generators_kernels(KernelRegistry& registry);
void register_grid_sample_kernels(KernelRegistry& registry);
void register_identity_kernels(KernelRegistry& registry);
void register_logical_kernels(KernelRegistry& registry);
void register_loop_kernels(KernelRegistry& registry);
void register_loss_kernels(KernelRegistry& registry);
void register_matmul_kernels(KernelRegistry& registry);
void register_matmul_nbits_kernels(KernelRegistry& registry);
void register_non_max_suppression_kernels(KernelRegistry& registry);
void register_normalization_kernels(KernelRegistry& registry);
void register_pad_kernels(KernelRegistry& registry);
void register_pool_kernels(KernelRegistry& registry);
void register_qlinear16_kernels(KernelRegistry& registry);
void register_qlinear_region_kernels(KernelRegistry& registry);
void register_qlinear_binary_kernels(KernelRegistry& registry);
void register_qlinear_concat_kernels(KernelRegistry& registry);
void register_qlinear_contrib_kernels(KernelRegistry& registry);
void register_qlinear_lookup_kernels(KernelRegistry& registry);
void register_qlinear_pool_kernels(KernelRegistry& registry);
void register_quantize_kernels(KernelRegistry& registry);
void register_reduce_kernels(KernelRegistry& registry);
void register_reshape_kernels(KernelRegistry& registry);
void register_resize_kernels(KernelRegistry& registry);
void register_rnn_kernels(KernelRegistry& registry);
void register_roi_align_kernels(KernelRegistry& registry);
void register_scan_kernels(KernelRegistry& registry);
void register_scatter_kernels(KernelRegistry& registry);
void register_select_kernels(KernelRegistry& registry);
void register_shape_ops_kernels(KernelRegistry& registry);
void register_signal_kernels(KernelRegistry& registry);
void register_slice_kernels(KernelRegistry& registry);
void register_softmax_kernels(KernelRegistry& registry);
void register_tfidf_vectorizer_kernels(KernelRegistry& registry);
void register_topk_kernels(KernelRegistry& registry);
void register_transpose_kernels(KernelRegistry& registry);
void register_trilu_reverse_kernels(KernelRegistry& registry);
void register_unary_kernels(KernelRegistry& registry);
void register_unique_kernels(KernelRegistry& registry);

}  // namespace nfuse::backends::ref
