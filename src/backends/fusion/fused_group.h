// A fused group: a chain of strip layers executed depth-first. The group's output is computed
// in strips of `tile_rows` rows; for each strip every earlier member computes only the rows the
// next one still needs, into a per-thread line buffer, so only the group's input, its members'
// external operands and its output touch the arena.
//
// Line buffers. Member i's buffer holds image rows [base, base + capacity) of all its channels
// (channel planes `capacity` rows apart, so every kernel sees an ordinary NCHW plane with a
// row stride). Rows a later strip still needs (the halo of a 3x3 window) stay where they are;
// only when the next rows would not fit are the kept rows moved to the front, once every few
// strips (capacity = the largest need + a few strips of slack), so no row is computed twice
// within a thread. Threads take contiguous bands of output rows, each with its own buffers;
// only the few halo rows at a band's edge are computed by both neighbours.
//
// Stages. Element-wise members (activations, Add/Mul) join the stage of the member before them
// and run in place on the rows it just wrote, so a Conv -> Mul(scale) -> Add(shift) chain costs
// one line buffer and one pass over cache-hot rows, not three buffers and two copies.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "backends/backend.h"
#include "backends/cpu/cpu_op.h"
#include "backends/fusion/group_former.h"
#include "backends/fusion/strip_layer.h"

namespace nfuse::backends::fusion {

class FusedGroup {
 public:
  // `plan.nodes` form a chain (each consumes the previous one's output as its input
  // `plan.main_inputs[i]`); all accepted by member_rejection() with static 4-D shapes.
  // `plan.operands`: Resizes whose outputs members read as operands, gathered per strip.
  static Result<std::unique_ptr<FusedGroup>> create(const GroupPlan& plan, const CompileContext& ctx);

  Status run(ExecContext& ctx, ThreadPool& pool, Scratch& scratch) { return run(ctx, pool, scratch, 0, bands_.size()); }
  // Bands [first, end) of the output rows only (independent: each recomputes its halo), in
  // parallel: a scheduler's unit of work. The group's output is allocated by the first band.
  Status run(ExecContext& ctx, ThreadPool& pool, Scratch& scratch, size_t first, size_t end);
  size_t band_count() const { return bands_.size(); }
  // A scheduler's units of a group with no more bands than workers: piece p of pieces() runs the
  // p-th share of every band's strips (cpu::pieces_for_work of the group's multiply-adds, at
  // most a strip each), so a request arriving meanwhile waits for a piece, not for the group.
  // Pieces run in order, 0 first; no halo row is computed twice.
  size_t pieces() const { return pieces_; }
  Status run_piece(ExecContext& ctx, ThreadPool& pool, Scratch& scratch, size_t piece);
  // Floats of scratch one worker needs (line buffers + the layers' own).
  size_t scratch_floats() const { return scratch_floats_; }
  const GroupTraffic& traffic() const { return traffic_; }
  const std::vector<const ir::Node*>& nodes() const { return nodes_; }
  const std::vector<const ir::Node*>& operands() const { return operands_; }

 private:
  struct Buffer {  // one member's line buffer in one worker's scratch
    float* data = nullptr;
    size_t capacity = 0;  // rows
    size_t base = 0, done = 0;
    bool valid = false;
  };
  struct Band {
    size_t image = 0, y0 = 0, y1 = 0;
  };
  struct Post {  // an element-wise step run per channel on the main member's fresh rows
    const StripLayer* layer = nullptr;
    size_t ext_layer = 0;  // whose external views it reads; kNoExternals for folded affines
  };
  static constexpr size_t kNoExternals = static_cast<size_t>(-1);
  struct Stage {
    std::vector<size_t> layers;  // a main member, then the element-wise ones run in place after it
    std::vector<Post> posts;     // those element-wise members, constant Mul/Add runs folded
  };
  // Bands, line-buffer capacities and scratch for strips of `tile_rows`; the schedule's exact
  // arena bytes into *fused.
  void plan_tiles(size_t tile_rows, size_t threads, int64_t* fused);
  // One worker's state for a band, sized once so a run allocates nothing.
  struct BandState {
    std::vector<Buffer> buffers;             // per stage (the last one writes the arena)
    std::vector<RowRange> needs;             // per stage, for the current strip
    std::vector<std::vector<RowView>> ext;   // per layer, its external operands' views
    std::vector<RowView> resize_src;         // per resized operand, its source in the arena
    float* scratch = nullptr;                // the worker's scratch (gather buffers at their offsets)
  };
  // An external operand read through a Resize (plan.operands): gathered per strip into
  // `rows` rows of a buffer at `offset` floats into the worker's scratch.
  struct ResizedExt {
    size_t layer = 0, ext = 0, stage = 0;
    ResizedOperand op;
    size_t offset = 0, rows = 0;
  };
  BandState make_state() const;
  // Points a band state's line buffers into `mem` (one worker's scratch), all empty.
  void reset_state(BandState& state, float* mem) const;
  // Where run_band may stop early: at a strip starting at or past `from` while `pool` has a
  // yield requested (no pool: never).
  struct Yield {
    const ThreadPool* pool = nullptr;
    size_t from = 0;
  };
  // Runs (or, without `ctx`, only counts the arena bytes of) output rows [ya, yb) of a band,
  // continuing from what `state` holds (ya: the band's start or where the last call stopped).
  // Returns the row it stopped at: yb, or earlier when it yielded.
  size_t run_band(const Band& band, size_t ya, size_t yb, ExecContext* ctx, BandState& state, float* layer_scratch,
                  std::vector<RowRange>* max_need, int64_t* arena_bytes, const Yield& yield) const;
  RowView arena_view(ExecContext& ctx, int slot, size_t image, const PlaneShape& shape, StripLayer::Operand kind) const;

  std::vector<const ir::Node*> nodes_, operands_;
  std::vector<std::unique_ptr<StripLayer>> layers_;
  int input_slot_ = -1, output_slot_ = -1;
  bool output_preallocated_ = true;  // false for graph outputs: a fresh tensor every run
  std::vector<int64_t> output_dims_;
  ir::DType output_dtype_ = ir::DType::kF32;
  std::vector<std::vector<int>> ext_slots_;  // per layer
  // Per layer and external: the stage whose line buffer holds it (a skip value produced inside
  // the group, read as a residual), or -1 for the arena.
  std::vector<std::vector<int>> ext_stage_;
  std::vector<ResizedExt> resized_;
  std::vector<std::vector<int>> ext_resized_;  // per layer and external: index into resized_, or -1
  size_t batch_ = 1, tile_rows_ = 1, pieces_ = 1;
  std::vector<size_t> progress_;  // run_piece: per band, the first output row not yet computed
  std::vector<Band> bands_;
  std::vector<Stage> stages_;
  std::vector<std::unique_ptr<StripLayer>> folded_;  // the affines posts point to
  std::vector<size_t> capacity_;  // line-buffer rows per stage (all but the last)
  std::vector<BandState> workers_;  // one per pool worker (per band in pieces), buffers pointing into its scratch
  size_t buffer_floats_ = 0, layer_scratch_floats_ = 0, scratch_floats_ = 0;
  GroupTraffic traffic_;
};

}  // namespace nfuse::backends::fusion
