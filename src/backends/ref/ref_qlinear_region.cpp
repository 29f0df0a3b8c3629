// Reference nfuse.QLinearRegion (ops/qlinear_region.cpp): each channel plane dequantized, the
// steps run on it, the result quantized (backends/qlinear_region_program.h).
#include <vector>

#include "backends/qlinear_region_program.h"
#include "backends/ref/builtin_kernels.h"
#include "backends/ref/ref_kernel.h"

namespace nfuse::backends::ref {
namespace {

Status qlinear_region(KernelArgs& a) {
  const ir::Tensor& x = a.in(0);
  ir::Tensor& y = a.out(0);
  const int64_t batch = x.rank() >= 1 ? x.dim(0) : 1;
  const int64_t channels = x.rank() >= 2 ? x.dim(1) : 1;
  const int64_t inner = batch * channels > 0 ? x.numel() / (batch * channels) : 0;
  NFUSE_ASSIGN_OR_RETURN(QLinearRegionProgram p, read_qlinear_region(a.node, a.inputs, channels));
  std::vector<std::vector<float>> buffers(p.steps.size() + 1, std::vector<float>(static_cast<size_t>(inner)));
  std::vector<float*> slots;
  for (auto& b : buffers) slots.push_back(b.data());
  for (int64_t plane = 0; plane < batch * channels; ++plane) {
    run_qlinear_region(p, x.dtype(), x.raw(), y.dtype(), y.raw(), static_cast<size_t>(plane * inner),
                       static_cast<size_t>(inner), plane % channels, slots.data());
  }
  return ok_status();
}

}  // namespace

void register_qlinear_region_kernels(KernelRegistry& registry) { registry.add("QLinearRegion", qlinear_region); }

}  // namespace nfuse::backends::ref
