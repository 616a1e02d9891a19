// DynamicLibrary: a shared library opened at run time (dlopen), for the
// CUDA libraries the CUDA twins use only when a GPU is there (cuBLAS,
// cuDNN), so binaries need none of them to start. Internal.
//
// Ownership: a library is never closed (function pointers taken from it
// stay valid until exit). Thread-safety: a plain value; dlopen/dlsym are
// thread-safe.
#ifndef SLUICE_DEVICE_DYNAMIC_LIBRARY_H_
#define SLUICE_DEVICE_DYNAMIC_LIBRARY_H_

#include <initializer_list>
#include <string_view>

#include "sluice/core/result.h"

namespace sluice::gpu_internal {

class DynamicLibrary {
 public:
  // Opens the first of `sonames` that loads ("libcudnn.so.9", then
  // "libcudnn.so"). Unavailable "cannot open <what>: <each dlerror>" if none
  // does.
  static Result<DynamicLibrary> OpenFirst(std::string_view what,
                                          std::initializer_list<const char*> sonames);

  // The address of `name` as the pointer type of `*fn`; false (and a null
  // *fn) if the library has no such symbol.
  template <typename Fn>
  bool Resolve(const char* name, Fn* fn) const {
    *fn = reinterpret_cast<Fn>(Symbol(name));
    return *fn != nullptr;
  }

 private:
  explicit DynamicLibrary(void* handle) : handle_(handle) {}
  void* Symbol(const char* name) const;
  void* handle_ = nullptr;
};

}  // namespace sluice::gpu_internal

#endif  // SLUICE_DEVICE_DYNAMIC_LIBRARY_H_
