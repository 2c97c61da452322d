// Allocations that other code holds beyond JS: DLPack tensors out, and importers in other
// processes (CUDA IPC, counted in a shared page they increment and decrement). JS's free()
// of such a buffer only marks it released; the memory goes back to the allocator once
// nothing holds it, found by the last tensor's deleter, by ipc_collect(), or by the
// allocator itself when it runs short (a free-memory callback, as PyTorch's IPC collect).
#pragma once
#include <atomic>
#include <cstdint>

#include "../runtime/runtime.h"

namespace cca {

// A page of shared memory holding how many importers have an exported allocation open.
struct IpcCounter {
  int fd = -1;                               // a memfd; importers open /proc/<pid>/fd/<fd>
  std::uint64_t token = 0;                   // also in the handle: the page is the right one
  std::atomic<std::int64_t>* open = nullptr;  // in the page
};
struct IpcCounterPage {
  std::atomic<std::int64_t> open;
  std::uint64_t token;
};

// One more DLPack tensor over the allocation at `base` / one deleted.
void hold_tensor(Runtime& runtime, int device, DevicePtr base);
void drop_tensor(Runtime& runtime, int device, DevicePtr base);
// The allocation's importer counter, made on its first export (ERR_CCA_IPC_UNSUPPORTED
// when the system gives no shared memory).
IpcCounter ipc_counter(Runtime& runtime, int device, DevicePtr base);
// JS lets go of an allocation that was exported: freed now when nothing holds it (true).
// InvalidPointerError when it was already let go; an allocation never exported is freed.
bool release_exported(Runtime& runtime, int device, DevicePtr base);
// Frees every released allocation that nothing holds any more; returns how many.
std::size_t collect_exports(Runtime& runtime);

}  // namespace cca
