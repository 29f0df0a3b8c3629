#include "backends/fusion/fused_group.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "backends/fusion/strip_layer_impl.h"
#include "kernels/cpu_features.h"
#include "kernels/f32-gemm/f32_gemm.h"

namespace nfuse::backends::fusion {
namespace {

// Strips narrower than this many pixels leave the GEMM's NR-wide panels (16 or 32 columns)
// partly empty and pay the per-call overhead of every member too often: the tile rule's floor.
constexpr size_t kMinStripPixels = 512;

size_t round_up(size_t v, size_t m) { return (v + m - 1) / m * m; }

// Floats external operand e of layer l moves from the arena for `rows` output rows (constants
// are weights, not traffic).
int64_t external_bytes(const StripLayer& l, size_t e, size_t rows) {
  if (l.external_constant[e]) return 0;
  const PlaneShape shape = l.external_shape(e);
  const size_t elem = shape.elem;
  switch (l.external_kinds[e]) {
    case StripLayer::Operand::kFull: return static_cast<int64_t>(rows * shape.c * shape.w * elem);
    case StripLayer::Operand::kPerChannel: return static_cast<int64_t>(l.out.c * elem);
    case StripLayer::Operand::kScalar: return static_cast<int64_t>(elem);
  }
  return 0;
}

// Multiply-adds of one run of the group: a convolution's weights per output channel for each
// output element, one per element for the rest.
double group_macs(const std::vector<const ir::Node*>& nodes, const PlanView& type_of) {
  double macs = 0;
  for (const ir::Node* n : nodes) {
    auto out = type_of(n->output(0)).shape.static_dims();
    if (!out) continue;
    double work = 1;
    for (int64_t d : *out) work *= static_cast<double>(d);
    if (n->op_type == "Conv" && n->input(1)) {
      if (auto w = type_of(n->input(1)).shape.static_dims(); w && !w->empty() && (*w)[0] > 0) {
        double per_channel = 1;
        for (size_t i = 1; i < w->size(); ++i) per_channel *= static_cast<double>((*w)[i]);
        work *= per_channel;
      }
    }
    macs += work;
  }
  return macs;
}

}  // namespace

Result<std::unique_ptr<FusedGroup>> FusedGroup::create(const GroupPlan& plan, const CompileContext& ctx) {
  const std::vector<const ir::Node*>& nodes = plan.nodes;
  auto g = std::unique_ptr<FusedGroup>(new FusedGroup());
  g->nodes_ = nodes;
  g->operands_ = plan.operands;
  for (size_t i = 0; i < nodes.size(); ++i) {
    NFUSE_ASSIGN_OR_RETURN(auto layer, make_strip_layer(*nodes[i], ctx.type_of, plan.main_inputs[i], ctx.packs.get()));
    std::vector<int> slots, resized;
    for (size_t e = 0; e < layer->externals.size(); ++e) {
      const ir::Value* v = layer->externals[e];
      auto r = std::find(plan.operands.begin(), plan.operands.end(), v->producer);
      if (r == plan.operands.end()) {
        slots.push_back(ctx.slot_of(v));
        resized.push_back(-1);
        continue;
      }
      if (layer->external_kinds[e] != StripLayer::Operand::kFull)
        return internal_error(nodes[i]->label() + ": reads Resize output '" + v->name + "' as other than a full operand");
      NFUSE_ASSIGN_OR_RETURN(ResizedOperand op, resized_operand(**r, ctx.type_of));
      slots.push_back(ctx.slot_of((*r)->input(0)));
      resized.push_back(static_cast<int>(g->resized_.size()));
      g->resized_.push_back(ResizedExt{i, e, 0, std::move(op), 0, 0});
    }
    g->ext_slots_.push_back(std::move(slots));
    g->ext_resized_.push_back(std::move(resized));
    g->layers_.push_back(std::move(layer));
  }
  for (size_t i = 0; i < g->layers_.size(); ++i) {
    if (i > 0 && g->layers_[i]->elementwise()) {
      g->stages_.back().layers.push_back(i);
    } else {
      g->stages_.push_back(Stage{{i}, {}});
    }
  }
  for (Stage& st : g->stages_) {
    for (size_t k = 1; k < st.layers.size(); ++k) {
      const size_t i = st.layers[k];
      std::vector<float> scale, shift, prev_scale, prev_shift;
      if (g->layers_[i]->affine(&scale, &shift) && !st.posts.empty() &&
          st.posts.back().layer->affine(&prev_scale, &prev_shift)) {
        // (y * s1 + b1) * s2 + b2 = y * (s1 * s2) + (b1 * s2 + b2): one pass instead of two.
        for (size_t c = 0; c < scale.size(); ++c) {
          shift[c] += prev_shift[c] * scale[c];
          scale[c] *= prev_scale[c];
        }
        g->folded_.push_back(make_strip_affine(g->layers_[i]->out, std::move(scale), std::move(shift)));
        st.posts.back() = Post{g->folded_.back().get(), kNoExternals};
        continue;
      }
      st.posts.push_back(Post{g->layers_[i].get(), i});
    }
  }
  // Externals produced inside the group are read from the line buffer of the stage whose last
  // member produced them (form_groups allows that only where the rows stay there).
  for (size_t i = 0; i < g->layers_.size(); ++i) {
    std::vector<int> from(g->layers_[i]->externals.size(), -1);
    for (size_t e = 0; e < from.size(); ++e) {
      for (size_t s = 0; s + 1 < g->stages_.size(); ++s) {
        const size_t last = g->stages_[s].layers.back();
        if (last >= i || nodes[last]->output(0) != g->layers_[i]->externals[e]) continue;
        if (!g->layers_[i]->external_channels.empty() || g->layers_[i]->external_kinds[e] != StripLayer::Operand::kFull)
          return internal_error(nodes[i]->label() + ": a skip value must be a full-shape residual");
        from[e] = static_cast<int>(s);
      }
      for (size_t j = 0; j < i && from[e] < 0; ++j)
        if (nodes[j]->output(0) == g->layers_[i]->externals[e])
          return internal_error(nodes[i]->label() + ": reads a value rewritten in place inside its fused group");
    }
    g->ext_stage_.push_back(std::move(from));
  }
  for (ResizedExt& r : g->resized_)
    for (size_t st = 0; st < g->stages_.size(); ++st)
      if (std::count(g->stages_[st].layers.begin(), g->stages_[st].layers.end(), r.layer)) r.stage = st;
  const ir::Value* input = nodes.front()->input(plan.main_inputs.front());
  g->input_slot_ = ctx.slot_of(input);
  g->output_slot_ = ctx.slot_of(nodes.back()->output(0));
  g->output_preallocated_ = ctx.is_preallocated(nodes.back()->output(0));
  g->output_dims_ = *ctx.type_of(nodes.back()->output(0)).shape.static_dims();
  g->output_dtype_ = ctx.type_of(nodes.back()->output(0)).dtype;
  g->batch_ = static_cast<size_t>((*ctx.type_of(input).shape.static_dims())[0]);

  const StripLayer& last = *g->layers_.back();
  const size_t height = last.out.h;
  // One stage keeps nothing between strips: the whole band at once, like the layer-by-layer
  // kernel (strips would only add per-call overhead). Several stages: the smallest strip that
  // still fills the GEMM panels of every member, shrunk until one worker's line buffers and
  // scratch fit in L2. A member of a smaller plane than the last (before a deconvolution or an
  // upsampling) computes proportionally fewer rows per strip, so every member's plane counts:
  // the OCR detector's head (240-pixel rows into a 960-pixel output) ran 9.6 ms at one output
  // row per strip, 9.1 at two. A narrower element costs its integer kernels proportionally less
  // per pixel (an 8-bit one about a quarter of an f32 one), so those strips take proportionally
  // more pixels to amortise the same per-call costs (lraspp INT8 at 960, forced: 47.4 -> 45.1
  // ms; the other int8 zoo models within noise).
  const size_t min_pixels = kMinStripPixels * sizeof(float) / std::max<size_t>(1, last.out.elem);
  size_t rule = height;
  if (g->stages_.size() > 1) {
    rule = 1;
    for (const auto& l : g->layers_) {
      const size_t plane = std::max<size_t>(1, l->out.h * l->out.w);
      rule = std::max(rule, (min_pixels * height + plane - 1) / plane);
    }
    rule = std::min(rule, height);
  }
  const size_t l2_floats = kernels::cpu_features().l2_bytes / sizeof(float);
  // Strips of whole multiples of the last member's granularity (Winograd's 4-row tiles).
  const size_t last_g = g->layers_[g->stages_.back().layers.front()]->row_granularity();
  // A strip height the caller fixed, or a context binary stored for this group (the search's
  // answer when it was compiled): taken as it is, no search.
  int fixed = ctx.tile_rows;
  if (fixed <= 0 && ctx.stored_tile_rows) {
    auto it = ctx.stored_tile_rows->find(nodes.front());
    if (it != ctx.stored_tile_rows->end()) fixed = it->second;
  }
  size_t tiles = std::clamp<size_t>(fixed > 0 ? static_cast<size_t>(fixed) : round_up(rule, last_g), 1,
                                    std::max<size_t>(1, height));
  // Groups of narrow rows only (which `auto` gives back, fusion_backend.cpp, but a forced plan
  // runs) keep the rule's strips: shrunk to fit L2, their members' per-channel calls and the
  // windows re-read per strip cost more than the cache misses saved (lraspp at 960, forced:
  // int8 82 -> 52 ms, f32 161 -> 112 ms). Wide groups shrink to one row if need be.
  size_t widest = 0;
  for (const auto& l : g->layers_) widest = std::max(widest, l->out.w);
  const size_t floor_rows = widest < kMinFusedWidth ? round_up(rule, last_g) : 1;
  const size_t min_tiles = std::min(tiles, std::max(last_g, floor_rows));
  const size_t threads = static_cast<size_t>(std::max(1, ctx.threads));
  int64_t fused = 0;
  // Shrinking pays only if the smallest strips fit: when they do not (the OCR detector's stem,
  // 2.5 MB of line buffers and scratch at one row on a 1 MB L2), the buffers live in L3 at any
  // height, and smaller strips only add per-call costs (that stem: 11.5 ms at one row, 9.8 at
  // the rule's three).
  bool can_fit = true;
  if (fixed <= 0 && tiles > min_tiles) {
    g->plan_tiles(min_tiles, threads, &fused);
    can_fit = g->scratch_floats_ <= l2_floats;
  }
  for (;;) {
    g->plan_tiles(tiles, threads, &fused);
    if (fixed > 0 || !can_fit || tiles <= min_tiles || g->scratch_floats_ <= l2_floats) break;
    tiles = std::max<size_t>(min_tiles, tiles / 2 / last_g * last_g);
  }

  g->workers_.assign(threads, g->make_state());
  // Pieces: at most one per strip of the shortest band, and only with a band per worker at most
  // (a band's line buffers then live in the scratch of its index between pieces).
  if (g->bands_.size() <= threads) {
    size_t shortest = std::numeric_limits<size_t>::max();
    for (const Band& b : g->bands_) shortest = std::min(shortest, b.y1 - b.y0);
    const size_t strips = (shortest + g->tile_rows_ - 1) / g->tile_rows_;
    g->pieces_ = std::min(strips, cpu::pieces_for_work(group_macs(nodes, ctx.type_of), threads));
  }
  GroupTraffic& t = g->traffic_;
  t.fused_bytes = fused;
  for (size_t i = 0; i < g->layers_.size(); ++i) {
    const StripLayer& l = *g->layers_[i];
    int64_t bytes = static_cast<int64_t>(l.in.bytes() + l.out.bytes());
    for (size_t e = 0; e < l.externals.size(); ++e) bytes += external_bytes(l, e, l.out.h);
    t.layerwise_bytes += bytes * static_cast<int64_t>(g->batch_);
    t.nodes.push_back(nodes[i]->label());
  }
  for (const ResizedExt& r : g->resized_) {  // layer by layer, each Resize reads its source and writes its output
    const PlaneShape out = g->layers_[r.layer]->external_shape(r.ext);
    t.layerwise_bytes += static_cast<int64_t>((r.op.source.bytes() + out.bytes()) * g->batch_);
  }
  for (const ir::Node* n : plan.operands) t.nodes.push_back(n->label());
  t.label = nodes.front()->name + (nodes.size() > 1 ? " .. " + nodes.back()->name : "");
  t.tile_rows = static_cast<int>(g->tile_rows_);
  t.first = nodes.front();
  t.scratch_bytes = g->scratch_floats_ * sizeof(float);
  return g;
}

void FusedGroup::plan_tiles(size_t tile_rows, size_t threads, int64_t* fused) {
  tile_rows_ = tile_rows;
  const size_t height = layers_.back()->out.h;
  // Bands: whole images while there are enough for the threads, else each image cut into
  // bands of whole strips.
  const size_t strips = (height + tile_rows_ - 1) / tile_rows_;
  const size_t per_image = batch_ >= threads ? 1 : std::min(strips, (threads + batch_ - 1) / batch_);
  const size_t band_strips = (strips + per_image - 1) / std::max<size_t>(1, per_image);
  bands_.clear();
  for (size_t n = 0; n < batch_; ++n)
    for (size_t s = 0; s < strips; s += band_strips)
      bands_.push_back({n, s * tile_rows_, std::min(height, (s + band_strips) * tile_rows_)});

  // A dry run with unbounded buffers: the largest row range each buffer must hold, and the exact
  // arena bytes of the fused schedule.
  const size_t stages = stages_.size();
  BandState unbounded = make_state();
  for (Buffer& b : unbounded.buffers) b.capacity = std::numeric_limits<size_t>::max() / 4;
  std::vector<RowRange> max_need(stages);  // lo: rows held at once; hi: rows per call
  *fused = 0;
  for (const Band& band : bands_) {
    for (Buffer& b : unbounded.buffers) b.valid = false;
    run_band(band, band.y0, band.y1, nullptr, unbounded, nullptr, &max_need, fused, Yield{});
  }
  size_t offset = 0;
  capacity_.clear();
  for (size_t s = 0; s + 1 < stages; ++s) {
    const StripLayer& l = *layers_[stages_[s].layers.front()];
    const size_t held = std::max<size_t>(1, max_need[s].lo);
    // Slack for a few strips past the largest window, so the kept rows move only now and then.
    const size_t cap = std::min(l.out.h, held + std::max<size_t>(2, held));
    capacity_.push_back(cap);
    offset += round_up(l.out.c * cap * l.out.w * l.out.elem, 64) / sizeof(float);
  }
  for (ResizedExt& r : resized_) {
    const PlaneShape shape = layers_[r.layer]->external_shape(r.ext);
    r.rows = std::max<size_t>(1, max_need[r.stage].hi);
    r.offset = offset;
    offset += round_up(shape.c * r.rows * shape.w * shape.elem, 64) / sizeof(float);
  }
  buffer_floats_ = offset;
  layer_scratch_floats_ = 0;
  for (size_t s = 0; s < stages; ++s)
    for (size_t i : stages_[s].layers)
      layer_scratch_floats_ =
          std::max(layer_scratch_floats_, layers_[i]->scratch_floats(std::max<size_t>(1, max_need[s].hi)));
  scratch_floats_ = buffer_floats_ + layer_scratch_floats_;
}

RowView FusedGroup::arena_view(ExecContext& ctx, int slot, size_t image, const PlaneShape& shape,
                               StripLayer::Operand kind) const {
  ir::Tensor& t = ctx.slot(slot);
  auto* base = static_cast<uint8_t*>(t.raw());
  const size_t elem = ir::dtype_size(t.dtype());
  if (kind == StripLayer::Operand::kScalar) return RowView{base, 0, 1, 0};
  if (kind == StripLayer::Operand::kPerChannel) {  // [N|1, C, 1, 1] or [C, 1, 1]
    const size_t n = t.rank() == 4 && t.dim(0) != 1 ? image : 0;
    return RowView{base + n * shape.c * elem, 1, 1, 0};
  }
  return RowView{base + image * shape.elements() * elem, shape.h * shape.w, shape.w, 0};
}

FusedGroup::BandState FusedGroup::make_state() const {
  BandState st;
  st.buffers.resize(stages_.size());
  st.needs.resize(stages_.size());
  st.ext.resize(layers_.size());
  for (size_t i = 0; i < layers_.size(); ++i) st.ext[i].resize(ext_slots_[i].size());
  st.resize_src.resize(resized_.size());
  return st;
}

size_t FusedGroup::run_band(const Band& band, size_t ya, size_t yb, ExecContext* ctx, BandState& state,
                            float* layer_scratch, std::vector<RowRange>* max_need, int64_t* arena_bytes,
                            const Yield& yield) const {
  const size_t stages = stages_.size();
  std::vector<Buffer>& buffers = state.buffers;
  std::vector<RowRange>& needs = state.needs;
  std::vector<std::vector<RowView>>& ext = state.ext;
  RowView input, output;
  if (ctx) {
    input = arena_view(*ctx, input_slot_, band.image, layers_.front()->in, StripLayer::Operand::kFull);
    output = arena_view(*ctx, output_slot_, band.image, layers_.back()->out, StripLayer::Operand::kFull);
    for (size_t i = 0; i < layers_.size(); ++i)
      for (size_t e = 0; e < ext_slots_[i].size(); ++e)
        if (ext_stage_[i][e] < 0 && ext_resized_[i][e] < 0)
          ext[i][e] = arena_view(*ctx, ext_slots_[i][e], band.image, layers_[i]->external_shape(e),
                                 layers_[i]->external_kinds[e]);
    for (size_t k = 0; k < resized_.size(); ++k)
      state.resize_src[k] = arena_view(*ctx, ext_slots_[resized_[k].layer][resized_[k].ext], band.image,
                                       resized_[k].op.source, StripLayer::Operand::kFull);
  }
  for (size_t y0 = ya; y0 < yb; y0 += tile_rows_) {
    if (yield.pool && y0 >= yield.from && yield.pool->yield_requested()) return y0;
    const size_t y1 = std::min(yb, y0 + tile_rows_);
    needs[stages - 1] = {y0, y1};
    for (size_t s = stages - 1; s > 0; --s) {
      const StripLayer& main = *layers_[stages_[s].layers.front()];
      needs[s - 1] = needs[s].size() ? main.input_rows(needs[s].lo, needs[s].hi) : RowRange{0, 0};
    }
    for (size_t s = 0; s < stages; ++s) {
      const StripLayer& main = *layers_[stages_[s].layers.front()];
      size_t a = y0, b = y1;
      RowView out = output;
      if (s + 1 < stages) {
        Buffer& buf = buffers[s];
        const RowRange& nd = needs[s];
        if (!nd.size()) continue;
        // The rows to have: the need widened to whole multiples of the member's granularity.
        const size_t g = main.row_granularity();
        const size_t want_lo = nd.lo / g * g, want_hi = std::min(main.out.h, round_up(nd.hi, g));
        if (!buf.valid || nd.lo >= buf.done) {
          buf.base = buf.done = want_lo;
          buf.valid = true;
        } else if (want_hi > buf.base + buf.capacity) {
          if (ctx) {  // keep rows [nd.lo, done): move them to the front of every channel plane
            const size_t e = main.out.elem;
            const size_t plane = buf.capacity * main.out.w * e, keep = (buf.done - nd.lo) * main.out.w * e;
            auto* bytes = reinterpret_cast<uint8_t*>(buf.data);
            for (size_t c = 0; c < main.out.c; ++c)
              std::memmove(bytes + c * plane, bytes + c * plane + (nd.lo - buf.base) * main.out.w * e, keep);
          }
          buf.base = nd.lo;
        }
        a = buf.done;
        b = want_hi;
        if (a >= b) continue;
        buf.done = b;
        out = RowView{buf.data, buf.capacity * main.out.w, main.out.w, buf.base};
        if (max_need) (*max_need)[s].lo = std::max((*max_need)[s].lo, want_hi - want_lo);
      }
      if (max_need) (*max_need)[s].hi = std::max((*max_need)[s].hi, b - a);
      if (arena_bytes) {
        int64_t bytes = 0;
        if (s == 0) bytes += static_cast<int64_t>(main.input_rows(a, b).size() * main.in.c * main.in.w * main.in.elem);
        for (size_t i : stages_[s].layers)
          for (size_t e = 0; e < layers_[i]->externals.size(); ++e)
            if (ext_resized_[i][e] >= 0) {
              const ResizedOperand& op = resized_[static_cast<size_t>(ext_resized_[i][e])].op;
              bytes += static_cast<int64_t>(op.source_rows(a, b).size() * op.source.c * op.source.w * op.source.elem);
            } else if (ext_stage_[i][e] < 0) {
              bytes += external_bytes(*layers_[i], e, b - a);
            }
        if (s + 1 == stages) {
          const PlaneShape& o = layers_[stages_[s].layers.back()]->out;
          bytes += static_cast<int64_t>((b - a) * o.c * o.w * o.elem);
        }
        *arena_bytes += bytes;
      }
      if (!ctx) continue;
      for (size_t i : stages_[s].layers)  // skip values: their producer's buffer as it is now
        for (size_t e = 0; e < ext_stage_[i].size(); ++e)
          if (ext_stage_[i][e] >= 0) {
            const Buffer& src = buffers[static_cast<size_t>(ext_stage_[i][e])];
            const size_t w = layers_[i]->out.w;
            ext[i][e] = RowView{src.data, src.capacity * w, w, src.base};
          }
      for (size_t k = 0; k < resized_.size(); ++k) {  // operands read through a Resize: this strip's rows
        const ResizedExt& r = resized_[k];
        if (r.stage != s) continue;
        const size_t w = layers_[r.layer]->out.w;
        const RowView dst{state.scratch + r.offset, r.rows * w, w, a};
        r.op.gather(state.resize_src[k], dst, a, b);
        ext[r.layer][r.ext] = dst;
      }
      const Buffer* prev = s > 0 ? &buffers[s - 1] : nullptr;
      const RowView in = prev ? RowView{prev->data, prev->capacity * main.in.w, main.in.w, prev->base} : input;
      main.run(in, ext[stages_[s].layers.front()], out, a, b, layer_scratch);
      const std::vector<Post>& posts = stages_[s].posts;
      if (posts.empty()) continue;
      static const std::vector<RowView> kNone;
      const size_t n = (b - a) * main.out.w;
      for (size_t c = 0; c < main.out.c; ++c) {
        void* yc = static_cast<uint8_t*>(out.data) + (c * out.plane_stride + (a - out.base) * out.width) * main.out.elem;
        for (const Post& p : posts)
          p.layer->apply_channel(yc, yc, c, a, n, p.ext_layer == kNoExternals ? kNone : ext[p.ext_layer]);
      }
    }
  }
  return yb;
}

Status FusedGroup::run(ExecContext& ctx, ThreadPool& pool, Scratch& scratch, size_t first, size_t end) {
  if (first >= end || end > bands_.size())
    return internal_error("bands [" + std::to_string(first) + ", " + std::to_string(end) + ") of " +
                          std::to_string(bands_.size()));
  if (first == 0 && !output_preallocated_) {  // a graph output: the last run's buffer unless the caller still holds it
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::reuse_or_allocate(&ctx.slot(output_slot_), output_dtype_, output_dims_));
  }
  if (workers_.size() < pool.threads())  // sized at create() for ctx.threads, the pool's size
    return internal_error("fused group compiled for " + std::to_string(workers_.size()) + " threads, run on " +
                          std::to_string(pool.threads()));
  auto task = [&](size_t index, size_t worker) {
    float* mem = scratch.get(worker);
    reset_state(workers_[worker], mem);
    const Band& band = bands_[first + index];
    run_band(band, band.y0, band.y1, &ctx, workers_[worker], mem + buffer_floats_, nullptr, nullptr, Yield{});
  };
  pool.run(end - first, task);
  return ok_status();
}

Status FusedGroup::run_piece(ExecContext& ctx, ThreadPool& pool, Scratch& scratch, size_t piece) {
  if (piece >= pieces_ || bands_.size() > workers_.size())
    return internal_error("piece " + std::to_string(piece) + " of " + std::to_string(pieces_) + " with " +
                          std::to_string(bands_.size()) + " bands");
  // Whole in the first piece when not split, or when the pool has fewer workers than the plan
  // assumed (threads it could not start): the scratch then holds fewer buffers than bands.
  if (pieces_ == 1 || bands_.size() > pool.threads())
    return piece == 0 ? run(ctx, pool, scratch, 0, bands_.size()) : ok_status();
  if (piece == 0 && !output_preallocated_)
    NFUSE_RETURN_IF_ERROR_PLAIN(ir::reuse_or_allocate(&ctx.slot(output_slot_), output_dtype_, output_dims_));
  if (workers_.size() < pool.threads())
    return internal_error("fused group compiled for " + std::to_string(workers_.size()) + " threads, run on " +
                          std::to_string(pool.threads()));
  // Band b keeps its line buffers in scratch b, its state in workers_[b] and the rows it has
  // done in progress_[b] from piece to piece, whichever worker runs it: a strip continues where
  // the previous piece left its rows. A piece runs to at least its share of every band and on
  // while no yield is requested, so a group nobody waits for runs in its first piece.
  if (piece == 0) {
    progress_.resize(bands_.size());
    for (size_t b = 0; b < bands_.size(); ++b) {
      reset_state(workers_[b], scratch.get(b));
      progress_[b] = bands_[b].y0;
    }
  }
  bool left = false;
  for (size_t b = 0; b < bands_.size(); ++b) left = left || progress_[b] < bands_[b].y1;
  if (!left) return ok_status();
  auto task = [&](size_t b, size_t) {
    const Band& band = bands_[b];
    if (progress_[b] >= band.y1) return;
    const size_t strips = (band.y1 - band.y0 + tile_rows_ - 1) / tile_rows_;
    const size_t must =
        piece + 1 >= pieces_ ? band.y1 : std::min(band.y1, band.y0 + strips * (piece + 1) / pieces_ * tile_rows_);
    progress_[b] = run_band(band, progress_[b], band.y1, &ctx, workers_[b], scratch.get(b) + buffer_floats_, nullptr,
                            nullptr, Yield{&pool, must});
  };
  pool.run(bands_.size(), task);
  return ok_status();
}

void FusedGroup::reset_state(BandState& state, float* mem) const {
  size_t offset = 0;
  for (size_t s = 0; s + 1 < stages_.size(); ++s) {
    const StripLayer& l = *layers_[stages_[s].layers.front()];
    state.buffers[s] = Buffer{mem + offset, capacity_[s], 0, 0, false};
    offset += round_up(l.out.c * capacity_[s] * l.out.w * l.out.elem, 64) / sizeof(float);
  }
  state.scratch = mem;
}

}  // namespace nfuse::backends::fusion
