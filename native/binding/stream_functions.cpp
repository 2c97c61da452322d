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
    return Napi::Number::New(env, static_cast<double>(runtime(env).allocator(device_arg(info, 0)).create_stream()));
  });
}

Napi::Value StreamDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    runtime(env).allocator(device_arg(info, 0)).destroy_stream(u64_arg(info, 1, "stream"));
    return env.Undefined();
  });
}

Napi::Value StreamSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    runtime(env).allocator(device_arg(info, 0)).synchronize_stream(u64_arg(info, 1, "stream"));
    return env.Undefined();
  });
}

Napi::Value StreamQuery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    return Napi::Boolean::New(env, runtime(env).allocator(device_arg(info, 0)).query_stream(u64_arg(info, 1, "stream")));
  });
}

Napi::Value DeviceSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    runtime(env).allocator(device_arg(info, 0)).synchronize();
    return env.Undefined();
  });
}

}  // namespace

void register_stream_functions(Napi::Env env, Napi::Object exports) {
  exports.Set("streamCreate", Napi::Function::New(env, StreamCreate, "streamCreate"));
  exports.Set("streamDestroy", Napi::Function::New(env, StreamDestroy, "streamDestroy"));
  exports.Set("streamSynchronize", Napi::Function::New(env, StreamSynchronize, "streamSynchronize"));
  exports.Set("streamQuery", Napi::Function::New(env, StreamQuery, "streamQuery"));
  exports.Set("deviceSynchronize", Napi::Function::New(env, DeviceSynchronize, "deviceSynchronize"));
}

}  // namespace cca::binding
