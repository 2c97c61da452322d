#include "addon_state.h"

#include <atomic>

#include "../runtime/process_runtime.h"
#include "../interop/thread_frees.h"

namespace cca::binding {

namespace {
std::atomic<std::uint32_t> g_next_owner{1};
std::atomic<int> g_live_environments{0};

void release_environment(AddonState* s) {
  // The environment is going away (a worker exits, or the process ends): its buffers can
  // no longer be freed from JS, so they are freed here. When it is the last one, the
  // runtime goes too, returning the cache to the device while the driver is still whole
  // (static destructors at exit run after the driver library's own).
  // An environment's own runtime goes with it, returning its simulated memory.
  // Frees JS made just before are handed over first, so the history shows them as frees.
  set_thread_frees(nullptr, nullptr);
  while (!s->pending_frees.empty()) {
    try {
      s->pending_frees.hand_over(runtime_of(*s));
    } catch (...) {
      // Teardown must not throw. A failing free leaves the list; release_owner frees the rest.
    }
  }
  s->own_runtime.reset();
  try {
    Runtime& r = process_runtime();
    for (int d = 0; d < r.device_count(); ++d) r.allocator(d).release_owner(s->owner);
  } catch (...) {
    // Teardown must not throw; a runtime that cannot be built has nothing to release.
  }
  if (g_live_environments.fetch_sub(1) == 1) shutdown_runtime();
  delete s;
}

// The state is freed by the cleanup hook above, not by the instance-data finalizer.
void keep_state(Napi::Env, AddonState*) {}
}  // namespace

AddonState& state(Napi::Env env) { return *env.GetInstanceData<AddonState>(); }

void install_state(Napi::Env env) {
  auto* s = new AddonState();
  s->owner = g_next_owner.fetch_add(1);
  g_live_environments.fetch_add(1);
  // The state outlives the instance-data finalizer: the cleanup hook frees it.
  env.SetInstanceData<AddonState, keep_state>(s);
  // A C ABI call on this thread hands over the frees JS left (interop/thread_frees.h).
  set_thread_frees([](void* state) {
    auto* st = static_cast<AddonState*>(state);
    hand_over_pending(*st);
  }, s);
  env.AddCleanupHook([s] { release_environment(s); });
}

std::uint32_t runtime_generation(Napi::Env env) {
  const AddonState& s = state(env);
  return s.own_runtime ? s.own_generation : cca::runtime_generation();
}

std::uint32_t isolate_environment(Napi::Env env, const SimOptions& sim) {
  AddonState& s = state(env);
  std::unique_ptr<Runtime> fresh = build_sim_runtime(sim);  // may throw: nothing changes
  s.own_runtime = std::move(fresh);
  s.own_generation = next_generation();
  return s.own_generation;
}

std::uint32_t replace_environment_runtime(Napi::Env env, const std::string& kind, const SimOptions& sim) {
  AddonState& s = state(env);
  if (!s.own_runtime) {
    replace_runtime(kind, sim);
    return cca::runtime_generation();
  }
  if (kind != "sim") {
    throw InvalidArgumentError("this thread has simulated devices of its own (cuda.sim.isolate()); it cannot switch to '" +
                                   kind + "'",
                               "ERR_CCA_NOT_SIMULATED");
  }
  return isolate_environment(env, sim);
}

SimDevice& sim_device(Napi::Env env, int device) { return sim_device(runtime(env), device); }

}  // namespace cca::binding
