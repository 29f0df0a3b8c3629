#include "ops/matmul_geometry.h"

#include <algorithm>
#include <string>

#include "ops/op_helpers.h"

namespace nfuse::ops {

Result<ir::Shape> matmul_shape(const ir::Shape& a, const ir::Shape& b) {
  if (!a.rank_known() || !b.rank_known()) return ir::Shape::unknown_rank();
  if (a.rank() < 1 || b.rank() < 1) return invalid_model("matmul operands must have rank >= 1");
  std::vector<ir::Dim> ad = a.dims(), bd = b.dims();
  if (ad.size() == 1) ad.insert(ad.begin(), ir::Dim(1));
  if (bd.size() == 1) bd.push_back(ir::Dim(1));
  const ir::Dim& ka = ad[ad.size() - 1];
  const ir::Dim& kb = bd[bd.size() - 2];
  if (ka.is_static() && kb.is_static() && ka.value != kb.value) {
    return invalid_model("matmul inner dims differ: " + std::to_string(ka.value) + " vs " + std::to_string(kb.value));
  }
  const ir::Shape a_batch(std::vector<ir::Dim>(ad.begin(), ad.end() - 2));
  const ir::Shape b_batch(std::vector<ir::Dim>(bd.begin(), bd.end() - 2));
  NFUSE_ASSIGN_OR_RETURN(ir::Shape out, broadcast_shapes({&a_batch, &b_batch}));
  if (a.rank() > 1) out.dims().push_back(ad[ad.size() - 2]);
  if (b.rank() > 1) out.dims().push_back(bd[bd.size() - 1]);
  return out;
}

Result<MatMulGeometry> resolve_matmul(const std::vector<int64_t>& a_dims, const std::vector<int64_t>& b_dims) {
  NFUSE_ASSIGN_OR_RETURN(ir::Shape out, matmul_shape(ir::Shape::from_dims(a_dims), ir::Shape::from_dims(b_dims)));
  std::vector<int64_t> ad = a_dims, bd = b_dims;
  if (ad.size() == 1) ad.insert(ad.begin(), 1);
  if (bd.size() == 1) bd.push_back(1);
  MatMulGeometry g;
  g.m = ad[ad.size() - 2];
  g.k = ad[ad.size() - 1];
  g.n = bd[bd.size() - 1];
  g.out_dims = *out.static_dims();
  const size_t rank = std::max(ad.size(), bd.size()) - 2;
  // Batch dims of A and B right-aligned to `rank`, missing dims being 1.
  std::vector<int64_t> ab(rank, 1), bb(rank, 1);
  for (size_t i = 0; i + 2 < ad.size(); ++i) ab[rank - (ad.size() - 2) + i] = ad[i];
  for (size_t i = 0; i + 2 < bd.size(); ++i) bb[rank - (bd.size() - 2) + i] = bd[i];
  g.batch.resize(rank);
  int64_t total = 1;
  for (size_t i = 0; i < rank; ++i) {
    g.batch[i] = std::max(ab[i], bb[i]);
    if (ab[i] == 0 || bb[i] == 0) g.batch[i] = 0;
    total *= g.batch[i];
  }
  std::vector<int64_t> idx(rank, 0);
  for (int64_t t = 0; t < total; ++t) {
    int64_t ai = 0, bi = 0;
    for (size_t i = 0; i < rank; ++i) {
      ai = ai * ab[i] + (ab[i] == 1 ? 0 : idx[i]);
      bi = bi * bb[i] + (bb[i] == 1 ? 0 : idx[i]);
    }
    g.a_matrix.push_back(ai);
    g.b_matrix.push_back(bi);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < g.batch[i]) break;
      idx[i] = 0;
    }
  }
  return g;
}

}  // namespace nfuse::ops
