// What replay needs beyond the public API: rebuilding a recorded segment with its live
// blocks at their offsets (placeSegment) or giving back one that holds nothing
// (unplaceSegment), the block and segment sizes a request gets under given settings
// (sizePolicy), and a dry run of a request that changes nothing (planMalloc: the cached block
// that would serve it, and what it would release before a retry).
#include "replay_functions.h"

#include "../allocator/policy/facets/replay_planner.h"
#include "../allocator/policy/size_policy.h"
#include "export.h"
#include "args.h"

namespace cca::binding {

namespace {

// (device, size, stream, pool): the request planMalloc asks about.
struct Request {
  DeviceCachingAllocator& allocator;
  std::uint64_t size;
  StreamId stream;
  std::uint32_t pool;
};

Request request_arg(const Napi::CallbackInfo& info) {
  return Request{runtime(info).allocator(device_arg(info, 0)), u64_arg(info, 1, "size"), u64_arg(info, 2, "stream"),
                 to_id(number_arg(info, 3, "pool"), "pool")};
}

// placeSegment(device, size, stream, pool, small, layout) -> [segment, ...live blocks] addresses;
// layout: a Float64Array of (offset, block size, requested size) per live block.
Napi::Value PlaceSegment(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const int device = device_arg(info, 0);
  const std::size_t size = static_cast<std::size_t>(u64_arg(info, 1, "size"));
  const StreamId stream = u64_arg(info, 2, "stream");
  const std::uint32_t pool = to_id(number_arg(info, 3, "pool"), "pool");
  if (info.Length() < 6 || !info[4].IsBoolean() || !info[5].IsTypedArray() ||
      info[5].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array) {
    throw InvalidArgumentError("placeSegment(device, size, stream, pool, small, layout: Float64Array)",
                               "ERR_INVALID_ARG_TYPE");
  }
  const bool small = info[4].As<Napi::Boolean>().Value();
  Napi::Float64Array layout = info[5].As<Napi::Float64Array>();
  if (layout.ElementLength() % 3 != 0) {
    throw InvalidArgumentError("placeSegment: the layout holds 3 numbers per live block", "ERR_INVALID_ARG_VALUE");
  }
  std::vector<PlacedBlock> live(layout.ElementLength() / 3);
  for (std::size_t i = 0; i < live.size(); ++i) {
    live[i].offset = static_cast<std::size_t>(to_u64(layout[3 * i], "offset"));
    live[i].size = static_cast<std::size_t>(to_u64(layout[3 * i + 1], "block size"));
    live[i].requested = to_u64(layout[3 * i + 2], "requested size");
  }
  const std::vector<DevicePtr> ptrs =
      ReplayPlanner(runtime(info).allocator(device)).place_segment(size, stream, pool, small, live, state(env).owner);
  Napi::Float64Array out = Napi::Float64Array::New(env, ptrs.size());
  for (std::size_t i = 0; i < ptrs.size(); ++i) out[i] = static_cast<double>(ptrs[i]);
  return out;
}

// sizePolicy(settings, size) -> { rounded, segment }: the block size a request of `size`
// gets under `settings`, and the size of a segment made for it.
Napi::Value SizePolicy(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const AllocatorConfig config = AllocatorConfig::parse(string_arg(info, 0, "settings"));
  const std::size_t rounded = round_size(static_cast<std::size_t>(u64_arg(info, 1, "size")), config);
  Napi::Object o = Napi::Object::New(env);
  o.Set("rounded", static_cast<double>(rounded));
  o.Set("segment", static_cast<double>(allocation_size(rounded, config)));
  return o;
}

// planMalloc(device, size, stream, pool) -> { cached: { ptr, size } | null, limited,
// limitReleases, oversizeSizes, oversizeRetries }: what malloc would do now; no state changes.
Napi::Value PlanMalloc(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Request q = request_arg(info);
  const MallocPlan plan = ReplayPlanner(q.allocator).plan_malloc(q.size, q.stream, q.pool);
  Napi::Object o = Napi::Object::New(env);
  if (plan.cached) {
    Napi::Object c = Napi::Object::New(env);
    c.Set("ptr", static_cast<double>(plan.cached->ptr));
    c.Set("size", static_cast<double>(plan.cached->size));
    o.Set("cached", c);
  } else {
    o.Set("cached", env.Null());
  }
  o.Set("limited", plan.limited);
  o.Set("limitReleases", plan.limit_releases);
  Napi::Array sizes = Napi::Array::New(env, plan.oversize_sizes.size());
  for (std::size_t i = 0; i < plan.oversize_sizes.size(); ++i) {
    sizes.Set(static_cast<std::uint32_t>(i), static_cast<double>(plan.oversize_sizes[i]));
  }
  o.Set("oversizeSizes", sizes);
  o.Set("oversizeRetries", plan.oversize_retries);
  return o;
}

// unplaceSegment(device, base): gives back a placed segment that holds nothing.
Napi::Value UnplaceSegment(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  ReplayPlanner(runtime(info).allocator(device_arg(info, 0))).unplace_segment(u64_arg(info, 1, "base"));
  return env.Undefined();
}

}  // namespace

void register_replay_functions(Napi::Env env, Napi::Object exports) {
  export_function<PlaceSegment>(env, exports, "placeSegment");
  export_function<SizePolicy>(env, exports, "sizePolicy");
  export_function<PlanMalloc>(env, exports, "planMalloc");
  export_function<UnplaceSegment>(env, exports, "unplaceSegment");
}

}  // namespace cca::binding
