// Devices and the backend: which one runs, why, and the simulator's controls.
#include "runtime_functions.h"

#include "../device/select.h"

#include <iterator>
#include <utility>

#include "export.h"
#include "args.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

Napi::Value SetErrorFactory(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsFunction()) {
    throw Napi::TypeError::New(env, "setErrorFactory expects a function");
  }
  state(env).error_factory = Napi::Persistent(info[0].As<Napi::Function>());
  return env.Undefined();
}

// errorKinds(): the kinds the factory is called with (errors.h's CCA_ERROR_KINDS), so a
// test can hold lib/errors.ts to the same list.
Napi::Value ErrorKinds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  static const ErrorKind kinds[] = {
#define CCA_ERROR_VALUE(e, name) ErrorKind::e,
      CCA_ERROR_KINDS(CCA_ERROR_VALUE)
#undef CCA_ERROR_VALUE
  };
  Napi::Array out = Napi::Array::New(env, std::size(kinds));
  for (std::size_t i = 0; i < std::size(kinds); ++i) out.Set(static_cast<std::uint32_t>(i), error_kind_name(kinds[i]));
  return out;
}

Napi::Value RuntimeInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Runtime& r = runtime(info);
  Napi::Object o = Napi::Object::New(env);
  o.Set("backend", r.platform().backend());
  o.Set("deviceCount", r.device_count());
  o.Set("note", r.selection_note());
  o.Set("generation", static_cast<double>(runtime_generation(env)));
  o.Set("isolated", state(env).own_runtime != nullptr);
  return o;
}

Napi::Value DeviceInfo(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& a = runtime(info).allocator(device_arg(info, 0));
  std::size_t free_bytes = 0;
  std::size_t total = 0;
  a.mem_get_info(&free_bytes, &total);
  Napi::Object o = Napi::Object::New(env);
  o.Set("index", a.device_index());
  o.Set("name", a.device().name());
  o.Set("simulated", a.device().is_simulated());
  o.Set("totalMemory", static_cast<double>(total));
  const auto cc = a.device().compute_capability();
  o.Set("major", cc.first);
  o.Set("minor", cc.second);
  return o;
}

SimOptions sim_options_arg(const Napi::CallbackInfo& info, std::size_t first) {
  SimOptions sim;
  sim.devices = static_cast<int>(number_arg(info, first, "devices"));
  sim.capacity_bytes = static_cast<std::size_t>(u64_arg(info, first + 1, "capacityBytes"));
  return sim;
}

// replaceRuntime(backend, devices, capacityBytes) -> generation: the environment's own
// runtime when it has one, else the process's.
Napi::Value ReplaceRuntime(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::string kind = string_arg(info, 0, "backend");
  const std::uint32_t g = replace_environment_runtime(env, kind, sim_options_arg(info, 1));
  return Napi::Number::New(env, static_cast<double>(g));
}

// isolateRuntime(devices, capacityBytes) -> generation: simulated devices for this
// environment alone.
Napi::Value IsolateRuntime(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::Number::New(env, static_cast<double>(isolate_environment(env, sim_options_arg(info, 0))));
}

// The sim device and a stream of it that the allocator knows is live (a forged or destroyed
// handle is refused before the simulator sees it).
std::pair<SimDevice*, StreamId> live_sim_stream(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = device_arg(info, 0);
  const StreamId stream = u64_arg(info, 1, "stream");
  SimDevice& sim = sim_device(env, device);
  runtime(info).allocator(device).require_live_stream(stream);
  return {&sim, stream};
}

Napi::Value SimHoldStream(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 3 || !info[2].IsBoolean()) {
    throw InvalidArgumentError("Expected a boolean for held", "ERR_INVALID_ARG_TYPE");
  }
  auto [sim, stream] = live_sim_stream(info);
  sim->hold_stream(stream, info[2].As<Napi::Boolean>().Value());
  return env.Undefined();
}

Napi::Value SimCompleteStream(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto [sim, stream] = live_sim_stream(info);
  sim->complete_stream(stream);
  return env.Undefined();
}

Napi::Value SimFailNextMallocs(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::size_t after = info.Length() > 2 && !info[2].IsUndefined() ? u64_arg(info, 2, "afterBytes") : 0;
  sim_device(env, device_arg(info, 0)).fail_next_mallocs(static_cast<int>(u64_arg(info, 1, "count")), after);
  return env.Undefined();
}

Napi::Value SimFailNextEventQueries(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  sim_device(env, device_arg(info, 0)).fail_next_event_queries(static_cast<int>(u64_arg(info, 1, "count")));
  return env.Undefined();
}

Napi::Value SimState(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SimDevice& d = sim_device(env, device_arg(info, 0));
  Napi::Object o = Napi::Object::New(env);
  o.Set("usedBytes", static_cast<double>(d.used_bytes()));
  o.Set("deviceAllocations", static_cast<double>(d.live_allocations()));
  o.Set("pendingEvents", static_cast<double>(d.pending_events()));
  return o;
}

// cudaProbe() -> { available, reason, deviceCount, driverVersion, path }, without
// switching backends.
Napi::Value CudaProbeFn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const GpuProbe p = probe_gpu();
  Napi::Object o = Napi::Object::New(env);
  o.Set("available", p.available);
  o.Set("reason", p.reason);
  o.Set("deviceCount", p.device_count);
  o.Set("driverVersion", p.driver_version);
  o.Set("path", p.library_path);
  return o;
}

}  // namespace

void register_runtime_functions(Napi::Env env, Napi::Object exports) {
  export_function<CudaProbeFn>(env, exports, "cudaProbe");
  export_function<SetErrorFactory>(env, exports, "setErrorFactory");
  export_function<ErrorKinds>(env, exports, "errorKinds");
  export_function<RuntimeInfo>(env, exports, "runtimeInfo");
  export_function<DeviceInfo>(env, exports, "deviceInfo");
  export_function<ReplaceRuntime>(env, exports, "replaceRuntime");
  export_function<IsolateRuntime>(env, exports, "isolateRuntime");
  export_function<SimHoldStream>(env, exports, "simHoldStream");
  export_function<SimCompleteStream>(env, exports, "simCompleteStream");
  export_function<SimFailNextMallocs>(env, exports, "simFailNextMallocs");
  export_function<SimFailNextEventQueries>(env, exports, "simFailNextEventQueries");
  export_function<SimState>(env, exports, "simState");
}

}  // namespace cca::binding
