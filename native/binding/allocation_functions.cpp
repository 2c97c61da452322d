// alloc, free, recordStream: the hot path. Plain numbers cross the boundary (pointers and
// stream handles fit in a double's 53 bits), and nothing is allocated on the JS heap.
#include "allocation_functions.h"

#include "addon_state.h"
#include "args.h"
#include "runtime_holder.h"

namespace cca::binding {

namespace {

Napi::Value Alloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    int device = device_arg(info, 0);
    std::uint64_t size = size_arg(info, 1, "size");
    StreamId stream = u64_arg(info, 2, "stream");
    DevicePtr p = runtime().allocator(device).malloc(size, stream, state(env).owner);
    return Napi::Number::New(env, static_cast<double>(p));
  });
}

Napi::Value Free(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    int device = device_arg(info, 0);
    runtime().allocator(device).free(u64_arg(info, 1, "ptr"));
    return env.Undefined();
  });
}

Napi::Value RecordStream(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    int device = device_arg(info, 0);
    runtime().allocator(device).record_stream(u64_arg(info, 1, "ptr"), u64_arg(info, 2, "stream"));
    return env.Undefined();
  });
}

// An empty call with the same argument shape, for the benchmark's baseline.
Napi::Value Noop(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return guarded(env, [&] {
    device_arg(info, 0);
    u64_arg(info, 1, "size");
    return Napi::Number::New(env, 0);
  });
}

}  // namespace

void register_allocation_functions(Napi::Env env, Napi::Object exports) {
  exports.Set("alloc", Napi::Function::New(env, Alloc, "alloc"));
  exports.Set("free", Napi::Function::New(env, Free, "free"));
  exports.Set("recordStream", Napi::Function::New(env, RecordStream, "recordStream"));
  exports.Set("noop", Napi::Function::New(env, Noop, "noop"));
}

}  // namespace cca::binding
