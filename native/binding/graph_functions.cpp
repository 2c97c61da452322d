// CUDA graphs: capture on a stream, launch, upload, destroy, over the device's DeviceGraphs
// (which checks every handle and routes the capture's allocations).
#include "graph_functions.h"
#include "../allocator/policy/facets/graph_captures.h"

#include "args.h"
#include "export.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

// graphPoolHandle(device) -> pool id n of (0, n)
Napi::Value GraphPoolHandle(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), runtime(info).graphs(device_arg(info, 0)).pool_handle());
}

// graphCaptureBegin(device, stream, pool (0: its own), mode 0 global | 1 thread_local | 2 relaxed) -> the pool's id
Napi::Value GraphCaptureBegin(const Napi::CallbackInfo& info) {
  const double mode = number_arg(info, 3, "mode");
  if (mode != 0 && mode != 1 && mode != 2) throw InvalidArgumentError("capture mode must be 0, 1 or 2");
  const std::uint32_t id = runtime(info).graphs(device_arg(info, 0))
                               .begin_capture(u64_arg(info, 1, "stream"), static_cast<std::uint32_t>(u64_arg(info, 2, "pool")),
                                              static_cast<CaptureMode>(static_cast<int>(mode)));
  return Napi::Number::New(info.Env(), static_cast<double>(id));
}

// graphCaptureEnd(device, stream) -> graph handle
Napi::Value GraphCaptureEnd(const Napi::CallbackInfo& info) {
  return Napi::Number::New(
      info.Env(), static_cast<double>(runtime(info).graphs(device_arg(info, 0)).end_capture(u64_arg(info, 1, "stream"))));
}

// graphCaptureAbort(device, stream)
Napi::Value GraphCaptureAbort(const Napi::CallbackInfo& info) {
  runtime(info).graphs(device_arg(info, 0)).abort_capture(u64_arg(info, 1, "stream"));
  return info.Env().Undefined();
}

// graphLaunch(device, graph, stream)
Napi::Value GraphLaunch(const Napi::CallbackInfo& info) {
  runtime(info).graphs(device_arg(info, 0)).launch(u64_arg(info, 1, "graph"), u64_arg(info, 2, "stream"));
  return info.Env().Undefined();
}

// graphUpload(device, graph, stream)
Napi::Value GraphUpload(const Napi::CallbackInfo& info) {
  runtime(info).graphs(device_arg(info, 0)).upload(u64_arg(info, 1, "graph"), u64_arg(info, 2, "stream"));
  return info.Env().Undefined();
}

// graphDestroy(device, graph)
Napi::Value GraphDestroy(const Napi::CallbackInfo& info) {
  runtime(info).graphs(device_arg(info, 0)).destroy(u64_arg(info, 1, "graph"));
  return info.Env().Undefined();
}

// graphInfo(device, graph) -> { pool, nodes }
Napi::Value GraphInfo(const Napi::CallbackInfo& info) {
  const DeviceGraphs::GraphInfo g = runtime(info).graphs(device_arg(info, 0)).graph_info(u64_arg(info, 1, "graph"));
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("pool", static_cast<double>(g.pool));
  out.Set("nodes", static_cast<double>(g.nodes));
  return out;
}

// captureState(device) -> { underway, deferredFrees }
Napi::Value CaptureState(const Napi::CallbackInfo& info) {
  DeviceCachingAllocator& a = runtime(info).allocator(device_arg(info, 0));
  Napi::Object out = Napi::Object::New(info.Env());
  out.Set("underway", GraphCaptures(a).capture_underway());
  out.Set("deferredFrees", static_cast<double>(GraphCaptures(a).frees_deferred_by_capture()));
  return out;
}

// captureRoutingForTests(device, route): the negative control's hook
Napi::Value CaptureRoutingForTests(const Napi::CallbackInfo& info) {
  GraphCaptures(runtime(info).allocator(device_arg(info, 0))).set_capture_routing_for_tests(bool_arg(info, 1, "route"));
  return info.Env().Undefined();
}

}  // namespace

void register_graph_functions(Napi::Env env, Napi::Object exports) {
  export_function<GraphPoolHandle>(env, exports, "graphPoolHandle");
  export_function<GraphCaptureBegin>(env, exports, "graphCaptureBegin");
  export_function<GraphCaptureEnd>(env, exports, "graphCaptureEnd");
  export_function<GraphCaptureAbort>(env, exports, "graphCaptureAbort");
  export_function<GraphLaunch>(env, exports, "graphLaunch");
  export_function<GraphUpload>(env, exports, "graphUpload");
  export_function<GraphDestroy>(env, exports, "graphDestroy");
  export_function<GraphInfo>(env, exports, "graphInfo");
  export_function<CaptureState>(env, exports, "captureState");
  export_function<CaptureRoutingForTests>(env, exports, "captureRoutingForTests");
}

}  // namespace cca::binding
