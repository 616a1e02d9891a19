// DnnlContext: the CPU backend's oneDNN engine and primitive cache
// (internal).
//
// Creating a primitive descriptor costs far more than running a small
// convolution, and a training loop repeats the same shapes every step, so
// each family (conv, pool, matmul) keeps what it built under a key made of
// the shapes and parameters. Entries are never evicted: a model has a
// handful of distinct shapes.
#ifndef SLUICE_NN_CPU_DNNL_CONTEXT_H_
#define SLUICE_NN_CPU_DNNL_CONTEXT_H_

#include <dnnl.hpp>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <string_view>
#include <unordered_map>

#include "sluice/core/status.h"
#include "sluice/nn/cpu/scratch.h"

namespace sluice::nn::cpu {

struct DnnlContext {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};

  // The entry for `key`, made by make() (returning T) on first use. The
  // lock is held while making: two threads asking for the same new shape
  // build it once.
  template <typename T, typename Make>
  std::shared_ptr<const T> Get(const std::string& key, Make&& make) {
    std::lock_guard lock(mu_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return std::static_pointer_cast<const T>(it->second);
    auto made = std::make_shared<const T>(make());
    cache_.emplace(key, made);
    return made;
  }

 private:
  std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const void>> cache_;
};

// Runs fn() (returning Status), turning oneDNN's exceptions into Internal
// and allocation failures into ResourceExhausted, naming `method`.
template <typename Fn>
Status RunDnnl(std::string_view method, Fn&& fn) {
  try {
    return fn();
  } catch (const dnnl::error& e) {
    return Status::Internal(std::string(method) + ": oneDNN failed: " + e.what() + " (status " +
                            std::to_string(static_cast<int>(e.status)) + ")");
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted(std::string(method) + ": out of memory");
  }
}

// A oneDNN memory object over a tensor's bytes (no copy). oneDNN takes a
// non-const pointer even for inputs it only reads.
inline dnnl::memory Wrap(const dnnl::memory::desc& md, const dnnl::engine& engine,
                         const void* data) {
  return dnnl::memory(md, engine, const_cast<void*>(data));
}

// Attributes for primitives that take their scratchpad from Execute(): a
// library-managed one would be shared by threads running the same
// primitive.
inline dnnl::primitive_attr UserScratchpad() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

// Runs `prim` (made with UserScratchpad() attributes) with `args` plus this
// thread's scratchpad, and waits.
template <typename Pd>
Status Execute(std::string_view method, const dnnl::primitive& prim, const Pd& pd,
               const dnnl::engine& engine, std::unordered_map<int, dnnl::memory> args) {
  const dnnl::memory::desc sd = pd.scratchpad_desc();
  void* scratch = ThreadScratch(ScratchSlot::kScratchpad, sd.get_size());
  if (sd.get_size() > 0 && scratch == nullptr) {
    return Status::ResourceExhausted(std::string(method) + ": cannot allocate " +
                                     std::to_string(sd.get_size()) + " bytes of scratchpad");
  }
  args.emplace(DNNL_ARG_SCRATCHPAD, dnnl::memory(sd, engine, scratch));
  dnnl::stream stream(engine);
  prim.execute(stream, args);
  stream.wait();
  return Status::OK();
}

}  // namespace sluice::nn::cpu

#endif  // SLUICE_NN_CPU_DNNL_CONTEXT_H_
