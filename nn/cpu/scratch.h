// Per-thread scratch memory for oneDNN calls (internal to the CPU backend).
//
// Primitives run with user-managed scratchpads (so two threads may run the
// same cached primitive at once) and some calls reorder weights into a
// temporary; both want a few MB that would otherwise be malloc'd and
// page-faulted on every training step. Each calling thread keeps its own
// buffers, grown on demand and reused, so concurrent calls never share.
#ifndef SLUICE_NN_CPU_SCRATCH_H_
#define SLUICE_NN_CPU_SCRATCH_H_

#include <cstddef>

namespace sluice::nn::cpu {

// Slots: buffers of one call that are alive at the same time.
enum class ScratchSlot { kScratchpad, kWeights, kCount };

// At least `bytes` of 64-byte-aligned memory, valid until the same thread
// asks for the same slot again. nullptr only if allocation fails.
void* ThreadScratch(ScratchSlot slot, size_t bytes);

}  // namespace sluice::nn::cpu

#endif  // SLUICE_NN_CPU_SCRATCH_H_
