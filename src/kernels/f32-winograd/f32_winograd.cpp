// F(4,3) kernel selection, workspace sizes and the weight transform (prepare time, not hot).
#include "kernels/f32-winograd/f32_winograd.h"

namespace nfuse::kernels {

size_t f32_wino43_input_workspace_floats(size_t count) {
  return 24 * (count + 1) + 36 * count;  // phases, d B
}

size_t f32_wino43_output_workspace_floats(size_t count) { return 24 * count + 16 * count; }

F32Wino43Kernels f32_wino43_kernels(Isa isa) {
#if defined(__x86_64__)
  if (isa == Isa::kAvx512) return {f32_wino43_input__avx512, f32_wino43_output__avx512};
  if (isa == Isa::kAvx2Fma) return {f32_wino43_input__avx2, f32_wino43_output__avx2};
#endif
  (void)isa;  // aarch64: the scalar build is NEON-vectorised by the compiler (NEON is baseline)
  return {f32_wino43_input__scalar, f32_wino43_output__scalar};
}

void f32_wino43_weights(const float* g, float* u, size_t u_stride) {
  static constexpr double kG[6][3] = {{1.0 / 4, 0, 0},
                                      {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                      {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                      {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                      {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                      {0, 0, 1}};
  double gg[6][3];  // G g
  for (size_t i = 0; i < 6; ++i)
    for (size_t c = 0; c < 3; ++c) {
      double s = 0.0;
      for (size_t k = 0; k < 3; ++k) s += kG[i][k] * static_cast<double>(g[k * 3 + c]);
      gg[i][c] = s;
    }
  for (size_t i = 0; i < 6; ++i)
    for (size_t j = 0; j < 6; ++j) {
      double s = 0.0;
      for (size_t c = 0; c < 3; ++c) s += gg[i][c] * kG[j][c];
      u[(i * 6 + j) * u_stride] = static_cast<float>(s);
    }
}

}  // namespace nfuse::kernels
