// DynamicLibrary over dlopen/dlsym (dynamic_library.h).
#include "sluice/device/dynamic_library.h"

#include <dlfcn.h>

#include <string>

namespace sluice::gpu_internal {

Result<DynamicLibrary> DynamicLibrary::OpenFirst(std::string_view what,
                                                 std::initializer_list<const char*> sonames) {
  std::string errors;
  for (const char* name : sonames) {
    if (void* handle = dlopen(name, RTLD_NOW | RTLD_LOCAL); handle != nullptr) {
      return DynamicLibrary(handle);
    }
    const char* e = dlerror();
    errors += std::string(errors.empty() ? "" : "; ") + (e != nullptr ? e : name);
  }
  return Status::Unavailable("cannot open " + std::string(what) + ": " + errors);
}

void* DynamicLibrary::Symbol(const char* name) const { return dlsym(handle_, name); }

}  // namespace sluice::gpu_internal
