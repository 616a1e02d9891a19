// sluice.io: parse_example and friends (filled in by the io bindings).
#include "sluice_py.h"

namespace sluice::python {
void RegisterIo(nb::module_& m) { (void)m; }
}  // namespace sluice::python
