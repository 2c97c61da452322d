// Streams: created and destroyed through the allocator, which tracks which are live.
#include "stream_functions.h"

#include "addon_state.h"
#include "args.h"
#include "runtime_holder.h"

namespace cca::binding {

namespace {

Napi::Value StreamCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    return Napi::Number::New(env, static_cast<double>(runtime(info).allocator(device_arg(info, 0)).create_stream()));
  });
}

Napi::Value StreamDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    runtime(info).allocator(device_arg(info, 0)).destroy_stream(u64_arg(info, 1, "stream"));
    return env.Undefined();
  });
}

Napi::Value StreamSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    runtime(info).allocator(device_arg(info, 0)).synchronize_stream(u64_arg(info, 1, "stream"));
    return env.Undefined();
  });
}

Napi::Value StreamQuery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    return Napi::Boolean::New(env, runtime(info).allocator(device_arg(info, 0)).query_stream(u64_arg(info, 1, "stream")));
  });
}

Napi::Value DeviceSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    runtime(info).allocator(device_arg(info, 0)).synchronize();
    return env.Undefined();
  });
}

}  // namespace

void register_stream_functions(Napi::Env env, Napi::Object exports) {
  export_function(env, exports, "streamCreate", StreamCreate);
  export_function(env, exports, "streamDestroy", StreamDestroy);
  export_function(env, exports, "streamSynchronize", StreamSynchronize);
  export_function(env, exports, "streamQuery", StreamQuery);
  export_function(env, exports, "deviceSynchronize", DeviceSynchronize);
}

}  // namespace cca::binding
