// sluice.image: the image ops as built-in map functions (filled in by the
// image bindings).
#include "sluice_py.h"

namespace sluice::python {
void RegisterImage(nb::module_& m) { (void)m; }
}  // namespace sluice::python
