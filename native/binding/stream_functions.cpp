// Streams: created and destroyed through the allocator, which tracks which are live.
#include "stream_functions.h"

#include "export.h"
#include "args.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

Napi::Value StreamCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::Number::New(env, static_cast<double>(runtime(info).allocator(device_arg(info, 0)).create_stream()));
}

Napi::Value StreamDestroy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).destroy_stream(u64_arg(info, 1, "stream"));
  return env.Undefined();
}

Napi::Value StreamSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).synchronize_stream(u64_arg(info, 1, "stream"));
  return env.Undefined();
}

Napi::Value StreamQuery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::Boolean::New(env, runtime(info).allocator(device_arg(info, 0)).query_stream(u64_arg(info, 1, "stream")));
}

Napi::Value DeviceSynchronize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).synchronize();
  return env.Undefined();
}

}  // namespace

void register_stream_functions(Napi::Env env, Napi::Object exports) {
  export_function<StreamCreate>(env, exports, "streamCreate");
  export_function<StreamDestroy>(env, exports, "streamDestroy");
  export_function<StreamSynchronize>(env, exports, "streamSynchronize");
  export_function<StreamQuery>(env, exports, "streamQuery");
  export_function<DeviceSynchronize>(env, exports, "deviceSynchronize");
}

}  // namespace cca::binding
