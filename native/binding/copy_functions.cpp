// Copies between typed arrays and device memory, and fills. The allocator's SyncCopies facet
// does the work (allocator/policy/facets/sync_copies.h): it finds the live allocation at
// `base` under its lock and refuses any range outside it, so a raw caller of this addon
// cannot reach memory it does not own either.
#include "copy_functions.h"

#include "export.h"
#include "args.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

// copyHtoD(device, base, offset, typedArray)
Napi::Value CopyHtoD(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SyncCopies copies = runtime(info).copies(device_arg(info, 0));
  const Span src = bytes_arg(info, 3, "array");
  copies.copy_to_device(u64_arg(info, 1, "base"), u64_arg(info, 2, "offset"), src.data, src.bytes);
  return env.Undefined();
}

// copyDtoH(device, base, offset, typedArray)
Napi::Value CopyDtoH(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SyncCopies copies = runtime(info).copies(device_arg(info, 0));
  const Span dst = bytes_arg(info, 3, "array");
  copies.copy_to_host(dst.data, u64_arg(info, 1, "base"), u64_arg(info, 2, "offset"), dst.bytes);
  return env.Undefined();
}

// fill(device, base, offset, byte, bytes)
Napi::Value Fill(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  SyncCopies copies = runtime(info).copies(device_arg(info, 0));
  const std::uint64_t value = u64_arg(info, 3, "value");
  if (value > 255) throw InvalidArgumentError("fill value must be a byte (0-255)", "ERR_INVALID_ARG_VALUE");
  copies.fill(u64_arg(info, 1, "base"), u64_arg(info, 2, "offset"), static_cast<unsigned char>(value),
              u64_arg(info, 4, "bytes"));
  return env.Undefined();
}

}  // namespace

void register_copy_functions(Napi::Env env, Napi::Object exports) {
  export_function<CopyHtoD>(env, exports, "copyHtoD");
  export_function<CopyDtoH>(env, exports, "copyDtoH");
  export_function<Fill>(env, exports, "fill");
}

}  // namespace cca::binding
