// MemoryGate: a budget of bytes that threads hold while they work, so that
// what all of them hold at once stays within it (`sluice convert images
// --ram-budget`: the decodes, resizes and encodes of its workers).
//
// Acquire(n) blocks until n bytes fit in what the others hold, then holds
// them until the returned Hold is destroyed. Requests are served in their
// order of arrival (a large one is not overtaken for ever by small ones),
// and a request larger than the whole budget goes through once nothing else
// is held, alone: one image too large for the budget still converts, just
// never beside another. A thread must not hold two Holds of one gate at
// once (it could wait for itself).
//
// Thread-safe. The gate must outlive its Holds.
#ifndef SLUICE_TOOLS_MEMORY_GATE_H_
#define SLUICE_TOOLS_MEMORY_GATE_H_

#include <condition_variable>
#include <cstdint>
#include <mutex>

namespace sluice::tools {

class MemoryGate {
 public:
  // REQUIRES: budget > 0.
  explicit MemoryGate(uint64_t budget);
  MemoryGate(const MemoryGate&) = delete;
  MemoryGate& operator=(const MemoryGate&) = delete;

  // Bytes held from Acquire() until destruction (or a move out). Move-only.
  class Hold {
   public:
    Hold() = default;
    Hold(Hold&& other) noexcept;
    Hold& operator=(Hold&& other) noexcept;
    ~Hold();
    uint64_t bytes() const { return bytes_; }

   private:
    friend class MemoryGate;
    Hold(MemoryGate* gate, uint64_t bytes) : gate_(gate), bytes_(bytes) {}
    MemoryGate* gate_ = nullptr;
    uint64_t bytes_ = 0;
  };

  // Waits for `bytes` (see the file comment). 0 bytes never waits.
  Hold Acquire(uint64_t bytes);

  uint64_t budget() const { return budget_; }
  // The most bytes held at once so far, and how many requests had to wait.
  uint64_t peak() const;
  uint64_t waits() const;

 private:
  void Release(uint64_t bytes);

  const uint64_t budget_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t held_ = 0;
  uint64_t peak_ = 0;
  uint64_t waits_ = 0;
  uint64_t next_ticket_ = 0;  // given to the next request
  uint64_t serving_ = 0;      // the ticket whose turn it is
};

}  // namespace sluice::tools

#endif  // SLUICE_TOOLS_MEMORY_GATE_H_
