// MemPools: create, route this thread's allocations, release.
#include "mem_pool_functions.h"

#include "export.h"
#include "args.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

std::uint32_t pool_arg(const Napi::CallbackInfo& info) {
  const std::uint64_t v = u64_arg(info, 1, "pool");
  if (v == 0 || v > UINT32_MAX) throw InvalidArgumentError("Expected a MemPool id for pool", "ERR_CCA_INVALID_POOL");
  return static_cast<std::uint32_t>(v);
}

Napi::Value PoolCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  return Napi::Number::New(env, runtime(info).allocator(device_arg(info, 0)).create_pool());
}

Napi::Value PoolBegin(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).begin_allocate_to_pool(pool_arg(info));
  return env.Undefined();
}

Napi::Value PoolEnd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).end_allocate_to_pool(pool_arg(info));
  return env.Undefined();
}

Napi::Value PoolRelease(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  runtime(info).allocator(device_arg(info, 0)).release_pool(pool_arg(info));
  return env.Undefined();
}

Napi::Value PoolUseCount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& a = runtime(info).allocator(device_arg(info, 0));
  const std::uint32_t pool = pool_arg(info);
  return Napi::Number::New(env, a.pool_exists(pool) ? a.pool_use_count(pool) : 0);
}

}  // namespace

void register_mem_pool_functions(Napi::Env env, Napi::Object exports) {
  export_function<PoolCreate>(env, exports, "poolCreate");
  export_function<PoolBegin>(env, exports, "poolBegin");
  export_function<PoolEnd>(env, exports, "poolEnd");
  export_function<PoolRelease>(env, exports, "poolRelease");
  export_function<PoolUseCount>(env, exports, "poolUseCount");
}

}  // namespace cca::binding
