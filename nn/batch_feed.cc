// MakeBatchFeed: the registered feed of a device kind, or the default one
// that reads and copies inside Next().
#include "sluice/nn/batch_feed.h"

#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "sluice/nn/backend.h"

namespace sluice::nn {
namespace {

class ReadingFeed final : public BatchFeed {
 public:
  ReadingFeed(Backend& backend, Iterator input, FeedSelect select)
      : backend_(backend), input_(std::move(input)), select_(std::move(select)) {}

  Result<std::optional<std::vector<DeviceTensor>>> Next() override {
    SLUICE_ASSIGN_OR_RETURN(std::optional<Element> e, input_.next());
    if (!e) return std::optional<std::vector<DeviceTensor>>();
    SLUICE_ASSIGN_OR_RETURN(std::vector<Tensor> host, select_(*e));
    std::vector<DeviceTensor> out;
    out.reserve(host.size());
    for (const Tensor& t : host) {
      SLUICE_ASSIGN_OR_RETURN(DeviceTensor d, backend_.ToDevice(t));
      out.push_back(std::move(d));
    }
    return std::optional<std::vector<DeviceTensor>>(std::move(out));
  }

  IteratorStats input_stats() const override { return input_.stats(); }
  Iterator* iterator() override { return &input_; }

 private:
  Backend& backend_;
  Iterator input_;
  FeedSelect select_;
};

std::mutex& RegistryMutex() {
  static std::mutex mu;
  return mu;
}
std::map<DeviceKind, BatchFeedFactory>& Registry() {
  static std::map<DeviceKind, BatchFeedFactory> factories;
  return factories;
}

}  // namespace

void RegisterBatchFeed(DeviceKind kind, BatchFeedFactory factory) {
  std::lock_guard<std::mutex> l(RegistryMutex());
  Registry()[kind] = std::move(factory);
}

Result<std::unique_ptr<BatchFeed>> MakeBatchFeed(Backend& backend, const Dataset& input,
                                                 FeedSelect select, int64_t depth) {
  if (depth < 0) {
    return Status::InvalidArgument("Feed: depth must be >= 0, got " + std::to_string(depth));
  }
  BatchFeedFactory factory;
  {
    std::lock_guard<std::mutex> l(RegistryMutex());
    auto it = Registry().find(backend.device().kind());
    if (it != Registry().end()) factory = it->second;
  }
  if (factory) {
    SLUICE_ASSIGN_OR_RETURN(std::unique_ptr<BatchFeed> feed,
                            factory(backend, input, select, depth));
    if (feed) return feed;
  }
  SLUICE_ASSIGN_OR_RETURN(Iterator it, input.iterator());
  return std::unique_ptr<BatchFeed>(
      std::make_unique<ReadingFeed>(backend, std::move(it), std::move(select)));
}

}  // namespace sluice::nn
