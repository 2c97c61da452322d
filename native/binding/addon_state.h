// Per-environment addon state: the JS error factory, the owner id stamped on every
// allocation (so a worker's allocations are released when its environment is torn down),
// and the environment's own simulated runtime when it took one.
#pragma once
#include <napi.h>

#include <cstdint>
#include <memory>

#include "../common/errors.h"
#include "../common/hot.h"
#include "../runtime/process_runtime.h"
#include "call_slots.h"
#include "pending_frees.h"

namespace cca::binding {

struct AddonState {
  std::uint32_t owner = 0;
  Napi::FunctionReference error_factory;  // (kind, message, code, fields) => Error
  // Set by cuda.sim.isolate(): this environment's calls go to these simulated devices, which
  // no other environment sees, so worker threads can each replay a history at once. Only
  // this environment's thread touches it.
  std::unique_ptr<Runtime> own_runtime;
  std::uint32_t own_generation = 0;
  // DeviceBuffer.free()'s pointers not yet handed to the allocators (pending_frees.h).
  PendingFreeList pending_frees;
  // The numbers of the hot calls that take theirs in memory (call_slots.h).
  CallSlots slots;
};

AddonState& state(Napi::Env env);
void install_state(Napi::Env env);

// The runtime an environment's calls go to: its own, else the process's.
inline Runtime& runtime_of(AddonState& s) { return s.own_runtime ? *s.own_runtime : process_runtime(); }
inline Runtime& runtime(Napi::Env env) { return runtime_of(state(env)); }
// What every exported function does first: frees JS made since the last call reach the
// allocators before anything else this thread does. Throws what a free throws.
CCA_HOT_INLINE void hand_over_pending(AddonState& s) {
  if (__builtin_expect(!s.pending_frees.empty(), 0)) s.pending_frees.hand_over(runtime_of(s));
}
// The same from inside an exported function: its data is the environment's state (see
// export.h), which arrives with the arguments.
inline Runtime& runtime(const Napi::CallbackInfo& info) { return runtime_of(*static_cast<AddonState*>(info.Data())); }
// The generation of the environment's runtime (stale JS handles are refused by it).
std::uint32_t runtime_generation(Napi::Env env);
// Gives the environment simulated devices of its own, replacing any it had; the runtime it
// used before is untouched. Returns the new generation.
std::uint32_t isolate_environment(Napi::Env env, const SimOptions& sim);
// Replaces the environment's runtime: its own when it has one, else the process's.
std::uint32_t replace_environment_runtime(Napi::Env env, const std::string& kind, const SimOptions& sim);
// The simulated device of the environment's runtime (InvalidArgumentError when not sim).
SimDevice& sim_device(Napi::Env env, int device);

}  // namespace cca::binding
