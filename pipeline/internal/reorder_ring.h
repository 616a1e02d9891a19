// ReorderRing: results keyed by consecutive sequence numbers, taken back in
// order. Sequence numbers in flight span [front, front + size): a ring of
// optional slots indexed by seq & mask, grown (power of two) when a result
// arrives beyond it. No allocation per element once the ring has its size,
// unlike a std::map.
//
// Not thread-safe: the owner's mutex guards it.
#ifndef SLUICE_PIPELINE_INTERNAL_REORDER_RING_H_
#define SLUICE_PIPELINE_INTERNAL_REORDER_RING_H_

#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace sluice::pipeline_internal {

template <typename T>
class ReorderRing {
 public:
  // The seq taken next.
  int64_t front() const { return front_; }
  // Empties the ring and makes `seq` the next one taken.
  void Reset(int64_t seq) {
    for (auto& s : slots_) s.reset();
    front_ = seq;
    count_ = 0;
  }
  int64_t count() const { return count_; }
  bool Has(int64_t seq) const {
    return seq >= front_ && seq - front_ < static_cast<int64_t>(slots_.size()) &&
           slots_[Index(seq)].has_value();
  }
  // REQUIRES: seq >= front() and no result for seq yet.
  void Put(int64_t seq, T value) {
    if (seq - front_ >= static_cast<int64_t>(slots_.size())) Grow(seq - front_ + 1);
    slots_[Index(seq)].emplace(std::move(value));
    ++count_;
  }
  bool FrontReady() const { return !slots_.empty() && slots_[Index(front_)].has_value(); }
  // How many results are ready in a row from the front, counting to `most`.
  int64_t ReadyRun(int64_t most) const {
    const int64_t n = std::min<int64_t>(most, static_cast<int64_t>(slots_.size()));
    int64_t k = 0;
    while (k < n && slots_[Index(front_ + k)].has_value()) ++k;
    return k;
  }
  // REQUIRES: FrontReady().
  T TakeFront() {
    auto& s = slots_[Index(front_)];
    T v = std::move(*s);
    s.reset();
    ++front_;
    --count_;
    return v;
  }
  // Calls f(seq, value) for every held result in seq order.
  template <typename F>
  void ForEach(F&& f) const {
    for (int64_t i = 0; i < static_cast<int64_t>(slots_.size()); ++i) {
      const auto& s = slots_[Index(front_ + i)];
      if (s) f(front_ + i, *s);
    }
  }

 private:
  size_t Index(int64_t seq) const { return static_cast<size_t>(seq) & (slots_.size() - 1); }
  void Grow(int64_t need) {
    size_t n = slots_.empty() ? 16 : slots_.size();
    while (static_cast<int64_t>(n) < need) n *= 2;
    std::vector<std::optional<T>> next(n);
    const size_t mask = n - 1;
    for (int64_t i = 0; i < static_cast<int64_t>(slots_.size()); ++i) {
      auto& s = slots_[Index(front_ + i)];
      if (s) next[static_cast<size_t>(front_ + i) & mask] = std::move(s);
    }
    slots_ = std::move(next);
  }

  std::vector<std::optional<T>> slots_;
  int64_t front_ = 0;
  int64_t count_ = 0;
};

}  // namespace sluice::pipeline_internal

#endif  // SLUICE_PIPELINE_INTERNAL_REORDER_RING_H_
