#include "runtime/fence.h"

#include "core/thread_pool.h"

namespace nfuse::runtime {

Fence::State Fence::state() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return state_;
}

Status Fence::cause() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cause_;
}

double Fence::settled_us() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return settled_us_;
}

bool Fence::signal() { return settle(State::kSignalled, Status()); }

bool Fence::fail(Status cause) {
  if (cause.ok()) cause = internal_error("fence '" + label_ + "' failed without a cause");
  return settle(State::kFailed, std::move(cause));
}

bool Fence::settle(State state, Status cause) {
  std::vector<std::function<void()>> callbacks;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ != State::kPending) return false;
    state_ = state;
    cause_ = std::move(cause);
    settled_us_ = steady_us(std::chrono::steady_clock::now());
    callbacks.swap(callbacks_);
  }
  settled_cv_.notify_all();
  for (auto& fn : callbacks) fn();
  return true;
}

Fence::State Fence::wait() {
  std::unique_lock<std::mutex> lock(mutex_);
  settled_cv_.wait(lock, [&] { return state_ != State::kPending; });
  return state_;
}

Fence::State Fence::wait_for(std::chrono::nanoseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  settled_cv_.wait_for(lock, timeout, [&] { return state_ != State::kPending; });
  return state_;
}

void Fence::on_settled(std::function<void()> fn) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (state_ == State::kPending) {
      callbacks_.push_back(std::move(fn));
      return;
    }
  }
  fn();
}

const char* fence_state_name(Fence::State state) {
  switch (state) {
    case Fence::State::kPending: return "pending";
    case Fence::State::kSignalled: return "signalled";
    case Fence::State::kFailed: return "failed";
  }
  return "unknown";
}

}  // namespace nfuse::runtime
