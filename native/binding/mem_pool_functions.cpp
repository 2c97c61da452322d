// MemPools: create, route this thread's allocations, release.
#include "mem_pool_functions.h"
#include "../allocator/policy/facets/mem_pools.h"

#include "../allocator/policy/facets/ledger_reads.h"
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

// poolCreate(device, noSplit, useOnOom)
Napi::Value PoolCreate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& a = runtime(info).allocator(device_arg(info, 0));
  const bool no_split = bool_arg(info, 1, "noSplit");
  const bool use_on_oom = bool_arg(info, 2, "useOnOom");
  const std::uint32_t pool = MemPools(a).create_pool(no_split);
  if (use_on_oom) MemPools(a).set_use_on_oom(pool, true);
  return Napi::Number::New(env, pool);
}

Napi::Value PoolBegin(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MemPools(runtime(info).allocator(device_arg(info, 0))).begin_allocate_to_pool(pool_arg(info));
  return env.Undefined();
}

Napi::Value PoolEnd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MemPools(runtime(info).allocator(device_arg(info, 0))).end_allocate_to_pool(pool_arg(info));
  return env.Undefined();
}

Napi::Value PoolRelease(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  MemPools(runtime(info).allocator(device_arg(info, 0))).release_pool(pool_arg(info));
  return env.Undefined();
}

// poolReservedStats(device) -> per live MemPool: its id n, then reserved_bytes' all,
// small_pool and large_pool stats as current, peak, allocated, freed (13 numbers each).
Napi::Value PoolReservedStats(const Napi::CallbackInfo& info) {
  const std::vector<PoolReserved> pools = LedgerReads(runtime(info).allocator(device_arg(info, 0))).pool_reserved_stats();
  Napi::Float64Array out = Napi::Float64Array::New(info.Env(), pools.size() * 13);
  double* p = out.Data();
  for (const PoolReserved& r : pools) {
    *p++ = r.id;
    for (const Stat& s : r.reserved) {
      *p++ = static_cast<double>(s.current);
      *p++ = static_cast<double>(s.peak);
      *p++ = static_cast<double>(s.allocated);
      *p++ = static_cast<double>(s.freed);
    }
  }
  return out;
}

Napi::Value PoolUseCount(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto& a = runtime(info).allocator(device_arg(info, 0));
  const std::uint32_t pool = pool_arg(info);
  return Napi::Number::New(env, MemPools(a).pool_exists(pool) ? MemPools(a).pool_use_count(pool) : 0);
}

}  // namespace

void register_mem_pool_functions(Napi::Env env, Napi::Object exports) {
  export_function<PoolCreate>(env, exports, "poolCreate");
  export_function<PoolBegin>(env, exports, "poolBegin");
  export_function<PoolEnd>(env, exports, "poolEnd");
  export_function<PoolRelease>(env, exports, "poolRelease");
  export_function<PoolUseCount>(env, exports, "poolUseCount");
  export_function<PoolReservedStats>(env, exports, "poolReservedStats");
}

}  // namespace cca::binding
