// The _sluice extension module: the C++ half of the Python package
// (python/sluice/ is the other). Each part registers itself from its file.
#include "sluice_py.h"

NB_MODULE(_sluice, m) {
  using namespace sluice::python;
  m.doc() = "sluice's C++ core (use the sluice package, not this module)";
  // Arrays still alive at interpreter exit (a module-level batch, a
  // traceback holding one) are not leaks worth a warning on every exit.
  nb::set_leak_warnings(false);
  RegisterTensor(m);
  RegisterDataset(m);
  RegisterDistribute(m);
  RegisterIo(m);
  RegisterImage(m);
  RegisterText(m);
  RegisterNpy(m);
  RegisterParquet(m);
  RegisterWebDataset(m);
  RegisterMixing(m);
  RegisterWindow(m);
  RegisterSmallStages(m);
  RegisterPack(m);
  RegisterSnapshot(m);
  RegisterIoSequence(m);
  RegisterGfile(m);
  RegisterRemote(m);
}
