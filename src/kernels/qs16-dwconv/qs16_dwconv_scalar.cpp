// qs16-dwconv for scalar: the loop of qs16_dwconv_impl.h compiled with this file's flags.
#define NFUSE_QS16DW_ISA_NS qs16dw_scalar
#include "kernels/qs16-dwconv/qs16_dwconv_impl.h"

namespace nfuse::kernels {

void qs16_dwconv_row__scalar(const Qs16DwRow& r, uint16_t* y) { qs16dw_scalar::dwconv_row(r, y); }

}  // namespace nfuse::kernels
