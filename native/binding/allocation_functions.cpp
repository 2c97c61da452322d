// alloc, free, recordStream: the hot path, in plain Node-API rather than node-addon-api.
// Each crossing makes the fewest engine calls it can: one napi_get_cb_info, one
// napi_get_value_double per argument (which also rejects non-numbers, so no separate
// typeof), and the environment's owner id arrives as the function's data pointer instead
// of an instance-data lookup. Pointers and stream handles fit in a double's 53 bits.
// cuda.alloc() itself goes through allocInSlots, which takes its numbers in memory
// (call_slots.h) and so makes no engine call but napi_get_cb_info; alloc with arguments stays
// for everything else (replay, tests, benchmarks).
#include "allocation_functions.h"

#include <algorithm>
#include <cmath>

#include "../common/hot.h"
#include "addon_state.h"
#include "js_errors.h"
#include "args.h"
#include "export.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

struct Args {
  double v[5] = {0, 0, 0, 0, 0};
  std::size_t given = 0;  // how many were passed (trailing optional ones may be missing)
  AddonState* state = nullptr;
};

// Hands this thread's pending frees over first (plain_hand_over), then reads `count` numbers
// and up to `optional` more where passed (undefined counts as absent). On a wrong type or a
// missing number it leaves a pending JS error and returns false: these plain N-API exports
// let no C++ exception cross.
CCA_HOT bool read_numbers(napi_env env, napi_callback_info info, std::size_t count, const char* const* names, Args& out,
                  std::size_t optional = 0) {
  napi_value argv[5];
  size_t argc = 5;
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, argv, nullptr, &data);
  out.state = static_cast<AddonState*>(data);
  if (!plain_hand_over(env, data)) return false;
  const std::size_t wanted = std::min<std::size_t>(argc, count + optional);
  out.given = std::max(wanted, count);
  for (std::size_t i = 0; i < out.given; ++i) {
    if (i >= count) {
      napi_valuetype t;
      napi_typeof(env, argv[i], &t);
      if (t == napi_undefined) continue;
    }
    if (i >= argc || napi_get_value_double(env, argv[i], &out.v[i]) != napi_ok) {
      set_pending(env, InvalidArgumentError(std::string("Expected a number for ") + names[i], "ERR_INVALID_ARG_TYPE"));
      return false;
    }
  }
  return true;
}


// alloc(device, size, stream, stackId?, tagId?)
CCA_HOT napi_value Alloc(napi_env env, napi_callback_info info) {
  static const char* const names[] = {"device", "size", "stream", "stackId", "tagId"};
  Args a;
  if (!read_numbers(env, info, 3, names, a, 2)) return nullptr;
  return guarded_plain(env, [&] {
    CallContext ctx{to_id(a.v[3], "stackId"), to_id(a.v[4], "tagId")};
    DevicePtr p = runtime_of(*a.state).allocator(to_device(a.v[0])).malloc(to_size(a.v[1]), to_u64(a.v[2], "stream"),
                                                                a.state->owner, ctx);
    napi_value result;
    napi_create_double(env, static_cast<double>(p), &result);
    return result;
  });
}

// The start of a slotted call (call_slots.h): the environment's state, after its frees.
// Null, with the error pending, when a listed free failed.
CCA_HOT_INLINE AddonState* enter_slotted(napi_env env, napi_callback_info info) {
  size_t argc = 0;
  void* data = nullptr;
  napi_get_cb_info(env, info, &argc, nullptr, nullptr, &data);
  return plain_hand_over(env, data) ? static_cast<AddonState*>(data) : nullptr;
}

// allocInSlots(): alloc with its numbers in the slots (call_slots.h's AllocSlot); the pointer
// goes back in the device's slot.
CCA_HOT napi_value AllocInSlots(napi_env env, napi_callback_info info) {
  AddonState* state = enter_slotted(env, info);
  if (state == nullptr) return nullptr;
  return guarded_plain(env, [&]() -> napi_value {
    double* s = state->slots.words();
    const int device = to_device(s[kAllocDevice]);
    const std::uint64_t size = to_size(s[kAllocSize]);
    const std::uint64_t stream = to_u64(s[kAllocStream], "stream");
    const CallContext ctx{to_id(s[kAllocStackId], "stackId"), to_id(s[kAllocTagId], "tagId")};
    const DevicePtr p = runtime_of(*state).allocator(device).malloc(size, stream, state->owner, ctx);
    s[kAllocPtr] = static_cast<double>(p);
    return nullptr;
  });
}

// free(device, ptr, stackId?)
CCA_HOT napi_value Free(napi_env env, napi_callback_info info) {
  static const char* const names[] = {"device", "ptr", "stackId"};
  Args a;
  if (!read_numbers(env, info, 2, names, a, 1)) return nullptr;
  return guarded_plain(env, [&]() -> napi_value {
    runtime_of(*a.state).allocator(to_device(a.v[0])).free(to_u64(a.v[1], "ptr"), CallContext{to_id(a.v[2], "stackId"), 0});
    return nullptr;  // undefined
  });
}

napi_value RecordStream(napi_env env, napi_callback_info info) {
  static const char* const names[] = {"device", "ptr", "stream"};
  Args a;
  if (!read_numbers(env, info, 3, names, a)) return nullptr;
  return guarded_plain(env, [&]() -> napi_value {
    runtime_of(*a.state).allocator(to_device(a.v[0])).record_stream(to_u64(a.v[1], "ptr"), to_u64(a.v[2], "stream"));
    return nullptr;
  });
}

// The benchmark's baseline: the same crossing as alloc (read two numbers, return one) and
// no allocator work.
napi_value Noop(napi_env env, napi_callback_info info) {
  static const char* const names[] = {"device", "size"};
  Args a;
  if (!read_numbers(env, info, 2, names, a)) return nullptr;
  napi_value result;
  napi_create_double(env, a.v[1], &result);
  return result;
}

// noopInSlots(): allocInSlots's crossing with no allocator work (the size comes back as the
// pointer).
napi_value NoopInSlots(napi_env env, napi_callback_info info) {
  AddonState* state = enter_slotted(env, info);
  if (state == nullptr) return nullptr;
  double* s = state->slots.words();
  s[kAllocPtr] = s[kAllocSize];
  return nullptr;
}

// callSlots(): this environment's slots (call_slots.h).
Napi::Value CallSlotsArray(const Napi::CallbackInfo& info) {
  return static_cast<AddonState*>(info.Data())->slots.array(info.Env());
}

// pendingFrees(): this environment's list of frees for the next call (pending_frees.h).
Napi::Value PendingFrees(const Napi::CallbackInfo& info) {
  return static_cast<AddonState*>(info.Data())->pending_frees.array(info.Env());
}

// handOverFrees(): nothing of its own; the wrapper hands the list over, as for every call.
Napi::Value HandOverFrees(const Napi::CallbackInfo& info) { return info.Env().Undefined(); }

}  // namespace

void register_allocation_functions(Napi::Env env, Napi::Object exports) {
  export_function<PendingFrees>(env, exports, "pendingFrees");
  export_function<HandOverFrees>(env, exports, "handOverFrees");
  export_function<CallSlotsArray>(env, exports, "callSlots");
  export_plain(env, exports, "alloc", Alloc);
  export_plain(env, exports, "allocInSlots", AllocInSlots);
  export_plain(env, exports, "free", Free);
  export_plain(env, exports, "recordStream", RecordStream);
  export_plain(env, exports, "noop", Noop);
  export_plain(env, exports, "noopInSlots", NoopInSlots);
}

}  // namespace cca::binding
