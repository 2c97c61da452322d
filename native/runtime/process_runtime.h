// The process-wide Runtime, shared by every JS environment (main thread and workers) except
// those that took a simulated one of their own (cuda.sim.isolate; see addon_state.h).
#pragma once
#include <cstdint>
#include <string>

#include "runtime.h"
#include "../device/sim/sim_device.h"

namespace cca {

// The process runtime if one exists now, without creating it (nullptr otherwise).
Runtime* current_process_runtime();
// Creates the runtime on first use from CCA_DEVICE, CCA_SIM_DEVICES, CCA_SIM_CAPACITY_MB
// and the allocator config variables. Throws the configuration's error if they are bad.
Runtime& process_runtime();
// Replaces the process runtime (tests and demos on the sim backend). Every allocation of the
// old one is released; the generation number changes so stale JS handles are detected.
void replace_runtime(const std::string& kind, const SimOptions& sim);
// A runtime of simulated devices that no other environment sees, and a generation number for
// it from the same sequence as the process runtime's (so a handle is never valid in both).
std::unique_ptr<Runtime> build_sim_runtime(const SimOptions& sim);
std::uint32_t next_generation();
// Destroys the runtime (returning every segment to the device) if one exists. Called when
// the last JS environment is torn down, so the driver is never called during static
// destruction at exit; a later runtime() builds a fresh one.
void shutdown_runtime();
// Native clients (the C ABI, native/interop/) and DLPack tensors hold the process runtime: while any does,
// replace_runtime refuses (ERR_CCA_CLIENTS_OPEN, changing nothing) and shutdown_runtime
// leaves the runtime to them. pin creates it if needed (throwing as process_runtime does).
Runtime& pin_process_runtime();
void unpin_process_runtime();
// Increases each time the process runtime is replaced.
std::uint32_t runtime_generation();
// The simulated device of `r`, or an InvalidArgumentError when its backend is not sim.
SimDevice& sim_device(Runtime& r, int device);

}  // namespace cca
