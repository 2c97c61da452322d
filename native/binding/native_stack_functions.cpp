// Native stacks of C ABI callers (interop/native_stacks.h): turned on with JS's history
// settings, symbolized for a snapshot, and compacted with the JS stack table.
#include "native_stack_functions.h"

#include <vector>

#include "args.h"
#include "export.h"
#include "../interop/native_stacks.h"

namespace cca::binding {

namespace {

// setNativeStacks(level 0-3, depth 1-200)
Napi::Value SetNativeStacks(const Napi::CallbackInfo& info) {
  const std::uint64_t level = u64_arg(info, 0, "level");
  const std::uint64_t depth = u64_arg(info, 1, "depth");
  if (level > 3) throw InvalidArgumentError("level must be 0-3", "ERR_INVALID_ARG_VALUE");
  if (depth < 1 || depth > 200) throw InvalidArgumentError("depth must be 1-200", "ERR_INVALID_ARG_VALUE");
  native_stacks().configure(static_cast<int>(level), static_cast<int>(depth));
  return info.Env().Undefined();
}

// nativeStackFrames(id) -> [filename, name, offset, ...] (three values a frame, innermost first)
Napi::Value NativeStackFrames(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::uint64_t id = u64_arg(info, 0, "id");
  const std::vector<NativeFrame> frames = id > 0xffffffffu ? std::vector<NativeFrame>{} : native_stacks().frames(static_cast<std::uint32_t>(id));
  Napi::Array out = Napi::Array::New(env, frames.size() * 3);
  uint32_t k = 0;
  for (const NativeFrame& f : frames) {
    out.Set(k++, f.filename);
    out.Set(k++, f.name);
    out.Set(k++, static_cast<double>(f.offset));
  }
  return out;
}

Napi::Value NativeStacksNext(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), native_stacks().next_id());
}

// nativeStacksRetain(keep: Uint32Array, below): forgets the stacks below `below` not in keep.
Napi::Value NativeStacksRetain(const Napi::CallbackInfo& info) {
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint32_array) {
    throw InvalidArgumentError("Expected a Uint32Array of stack ids for keep", "ERR_INVALID_ARG_TYPE");
  }
  Napi::Uint32Array keep = info[0].As<Napi::Uint32Array>();
  const std::uint64_t below = u64_arg(info, 1, "below");
  std::vector<std::uint32_t> ids(keep.Data(), keep.Data() + keep.ElementLength());
  native_stacks().retain(ids, below > 0xffffffffu ? 0xffffffffu : static_cast<std::uint32_t>(below));
  return info.Env().Undefined();
}

}  // namespace

void register_native_stack_functions(Napi::Env env, Napi::Object exports) {
  export_function<SetNativeStacks>(env, exports, "setNativeStacks");
  export_function<NativeStackFrames>(env, exports, "nativeStackFrames");
  export_function<NativeStacksNext>(env, exports, "nativeStacksNext");
  export_function<NativeStacksRetain>(env, exports, "nativeStacksRetain");
}

}  // namespace cca::binding
