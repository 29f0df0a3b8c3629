// Fences: a one-shot event that a request signals once its outputs are written (or fails with
// the request's error), or that the caller signals (a render frame). Requests may wait on any
// number of fences; nothing of a request runs before every fence it waits on is signalled.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "nfuse/status.h"

namespace nfuse::runtime {

class Fence {
 public:
  enum class State { kPending, kSignalled, kFailed };

  // `producer`: the id of the request that settles it (0: the caller).
  explicit Fence(std::string label, uint64_t producer = 0) : label_(std::move(label)), producer_(producer) {}
  Fence(const Fence&) = delete;
  Fence& operator=(const Fence&) = delete;

  const std::string& label() const { return label_; }
  uint64_t producer() const { return producer_; }
  State state() const;
  // The failure's status (ok unless failed).
  Status cause() const;
  // Steady-clock microseconds at which it settled (0 while pending).
  double settled_us() const;

  // Settle once; false (and no change) when it already was.
  bool signal();
  bool fail(Status cause);

  // Blocks until settled, or until `timeout` passes; returns the state then.
  State wait();
  State wait_for(std::chrono::nanoseconds timeout);

  // Runs `fn` once the fence settles (at once, on this thread, when it already has); on the
  // settling thread otherwise, outside the fence's lock.
  void on_settled(std::function<void()> fn);

 private:
  bool settle(State state, Status cause);

  const std::string label_;
  const uint64_t producer_;
  mutable std::mutex mutex_;
  std::condition_variable settled_cv_;
  State state_ = State::kPending;
  Status cause_;
  double settled_us_ = 0.0;
  std::vector<std::function<void()>> callbacks_;
};

using FencePtr = std::shared_ptr<Fence>;

const char* fence_state_name(Fence::State state);

}  // namespace nfuse::runtime
