#include "memory_gate.h"

#include <algorithm>
#include <utility>

namespace sluice::tools {

MemoryGate::MemoryGate(uint64_t budget) : budget_(std::max<uint64_t>(budget, 1)) {}

MemoryGate::Hold::Hold(Hold&& other) noexcept
    : gate_(std::exchange(other.gate_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

MemoryGate::Hold& MemoryGate::Hold::operator=(Hold&& other) noexcept {
  if (this != &other) {
    if (gate_ != nullptr) gate_->Release(bytes_);
    gate_ = std::exchange(other.gate_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

MemoryGate::Hold::~Hold() {
  if (gate_ != nullptr) gate_->Release(bytes_);
}

MemoryGate::Hold MemoryGate::Acquire(uint64_t bytes) {
  if (bytes == 0) return Hold();
  std::unique_lock<std::mutex> lock(mu_);
  const uint64_t ticket = next_ticket_++;
  // Its turn, and room (or nothing held: then it goes alone).
  const auto admitted = [&] {
    return serving_ == ticket && (held_ == 0 || bytes <= budget_ - std::min(held_, budget_));
  };
  if (!admitted()) {
    ++waits_;
    cv_.wait(lock, admitted);
  }
  held_ += bytes;
  peak_ = std::max(peak_, held_);
  ++serving_;
  lock.unlock();
  cv_.notify_all();  // the next in line may fit too
  return Hold(this, bytes);
}

void MemoryGate::Release(uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    held_ -= bytes;
  }
  cv_.notify_all();
}

uint64_t MemoryGate::peak() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peak_;
}

uint64_t MemoryGate::waits() const {
  std::lock_guard<std::mutex> lock(mu_);
  return waits_;
}

}  // namespace sluice::tools
