// qs16-dwconv for avx2: the loop of qs16_dwconv_impl.h compiled with this file's flags.
#if defined(__x86_64__)
#define NFUSE_QS16DW_ISA_NS qs16dw_avx2
#include "kernels/qs16-dwconv/qs16_dwconv_impl.h"

namespace nfuse::kernels {

void qs16_dwconv_row__avx2(const Qs16DwRow& r, uint16_t* y) { qs16dw_avx2::dwconv_row(r, y); }

}  // namespace nfuse::kernels
#endif  // defined(__x86_64__)
