// Kernels: modules and functions, over the device's DeviceCompute (which checks every
// handle). The launch itself is launch_functions.cpp.
#include "compute_functions.h"


#include "args.h"
#include "export.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

Napi::Object attributes_object(Napi::Env env, const FunctionAttributes& a) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("maxThreadsPerBlock", a.max_threads_per_block);
  o.Set("numRegs", a.num_regs);
  o.Set("sharedSizeBytes", a.shared_size_bytes);
  o.Set("constSizeBytes", a.const_size_bytes);
  o.Set("localSizeBytes", a.local_size_bytes);
  o.Set("maxDynamicSharedSizeBytes", a.max_dynamic_shared_bytes);
  o.Set("ptxVersion", a.ptx_version);
  o.Set("binaryVersion", a.binary_version);
  return o;
}

// moduleLoad(device, image: Uint8Array) -> module id
Napi::Value ModuleLoad(const Napi::CallbackInfo& info) {
  const Span image = bytes_arg(info, 1, "image");
  return Napi::Number::New(info.Env(),
                           static_cast<double>(runtime(info).compute(device_arg(info, 0)).load_module(image.data, image.bytes)));
}

// moduleUnload(device, module)
Napi::Value ModuleUnload(const Napi::CallbackInfo& info) {
  runtime(info).compute(device_arg(info, 0)).unload_module(u64_arg(info, 1, "module"));
  return info.Env().Undefined();
}

// functionGet(device, module, name) -> { id, params: Float64Array [offset, size, ...] | null, attributes }
Napi::Value FunctionGet(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  LoadedFunction f = runtime(info).compute(device_arg(info, 0)).get_function(u64_arg(info, 1, "module"),
                                                                             string_arg(info, 2, "name"));
  Napi::Object out = Napi::Object::New(env);
  out.Set("id", static_cast<double>(f.id));
  if (f.params_known) {
    Napi::Float64Array params = Napi::Float64Array::New(env, f.params.size() * 2);
    for (std::size_t i = 0; i < f.params.size(); ++i) {
      params[2 * i] = static_cast<double>(f.params[i].offset);
      params[2 * i + 1] = static_cast<double>(f.params[i].size);
    }
    out.Set("params", params);
  } else {
    out.Set("params", env.Null());
  }
  out.Set("attributes", attributes_object(env, f.attributes));
  return out;
}

// functionAttributes(device, function) -> attributes
Napi::Value FunctionAttributesOf(const Napi::CallbackInfo& info) {
  return attributes_object(info.Env(),
                           runtime(info).compute(device_arg(info, 0)).function_attributes(u64_arg(info, 1, "function")));
}

// functionSetMaxDynamicShared(device, function, bytes)
Napi::Value FunctionSetMaxDynamicShared(const Napi::CallbackInfo& info) {
  const std::uint64_t bytes = u64_arg(info, 2, "bytes");
  if (bytes > 0x7fffffff) throw InvalidArgumentError("Expected at most 2^31-1 bytes for bytes", "ERR_INVALID_ARG_VALUE");
  runtime(info).compute(device_arg(info, 0)).set_max_dynamic_shared(u64_arg(info, 1, "function"), static_cast<int>(bytes));
  return info.Env().Undefined();
}

// launchLimits(device) -> { maxThreadsPerBlock, maxBlock: [x, y, z], maxGrid: [x, y, z], maxSharedPerBlockOptin }
Napi::Value LaunchLimitsOf(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const LaunchLimits l = runtime(info).compute(device_arg(info, 0)).launch_limits();
  Napi::Object o = Napi::Object::New(env);
  o.Set("maxThreadsPerBlock", l.max_threads_per_block);
  Napi::Array block = Napi::Array::New(env, 3), grid = Napi::Array::New(env, 3);
  for (uint32_t i = 0; i < 3; ++i) {
    block.Set(i, l.max_block[i]);
    grid.Set(i, l.max_grid[i]);
  }
  o.Set("maxBlock", block);
  o.Set("maxGrid", grid);
  o.Set("maxSharedPerBlockOptin", l.max_shared_per_block_optin);
  return o;
}

}  // namespace

void register_compute_functions(Napi::Env env, Napi::Object exports) {
  export_function<ModuleLoad>(env, exports, "moduleLoad");
  export_function<ModuleUnload>(env, exports, "moduleUnload");
  export_function<FunctionGet>(env, exports, "functionGet");
  export_function<FunctionAttributesOf>(env, exports, "functionAttributes");
  export_function<FunctionSetMaxDynamicShared>(env, exports, "functionSetMaxDynamicShared");
  export_function<LaunchLimitsOf>(env, exports, "launchLimits");
}

}  // namespace cca::binding
