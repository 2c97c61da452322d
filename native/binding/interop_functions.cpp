// The C ABI's face in JS: the table's address for a consumer addon, and what its clients
// hold (their names label their allocations in snapshots built in JS).
#include "interop_functions.h"

#include <cstdint>
#include <cstring>

#include "addon_state.h"
#include "args.h"
#include "export.h"
#include "../interop/c_api.h"
#include "../interop/clients.h"
#include "../interop/dlpack.h"
#include "../interop/exports.h"
#include "../interop/ipc.h"
#include "../runtime/process_runtime.h"

namespace cca::binding {

namespace {

// allocatorApi() -> bigint: the address of the process's cca_api_v1
Napi::Value AllocatorApi(const Napi::CallbackInfo& info) {
  return Napi::BigInt::New(info.Env(), static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(c_api_table())));
}

// clientTagName(tag) -> the client name a tag at or above 2^31 stands for ('' if none)
Napi::Value ClientTagName(const Napi::CallbackInfo& info) {
  return Napi::String::New(info.Env(), client_tag_name(info[0].As<Napi::Number>().Uint32Value()));
}

// clients() -> one record per client name and device: tag, name, open, device, bytes,
// bytesPeak, allocations, allocationsPeak, numAllocs, numFrees
Napi::Value Clients(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<ClientInfo> all = client_infos();
  Napi::Array out = Napi::Array::New(env, all.size());
  for (std::size_t i = 0; i < all.size(); ++i) {
    const ClientInfo& c = all[i];
    Napi::Object o = Napi::Object::New(env);
    o.Set("tag", c.tag);
    o.Set("name", c.name);
    o.Set("open", c.open);
    o.Set("device", c.device);
    o.Set("bytes", static_cast<double>(c.bytes));
    o.Set("bytesPeak", static_cast<double>(c.bytes_peak));
    o.Set("allocations", static_cast<double>(c.allocations));
    o.Set("allocationsPeak", static_cast<double>(c.allocations_peak));
    o.Set("numAllocs", static_cast<double>(c.num_allocs));
    o.Set("numFrees", static_cast<double>(c.num_frees));
    out.Set(static_cast<std::uint32_t>(i), o);
  }
  return out;
}

std::vector<std::int64_t> int64_list(const Napi::Value& v) {
  std::vector<std::int64_t> out;
  if (!v.IsArray()) return out;
  Napi::Array a = v.As<Napi::Array>();
  for (std::uint32_t i = 0; i < a.Length(); ++i) out.push_back(a.Get(i).As<Napi::Number>().Int64Value());
  return out;
}

void refuse_isolated(const Napi::CallbackInfo& info, const char* what) {
  if (static_cast<AddonState*>(info.Data())->own_runtime) {
    throw InvalidArgumentError(std::string(what) + ": this environment's devices are its own (cuda.sim.isolate); "
                               "memory is shared only from the process's devices",
                               "ERR_CCA_ISOLATED");
  }
}

// toDLPack(device, base, bytes, code, bits, lanes, shape, strides | null, byteOffset) ->
// bigint: the address of a DLManagedTensorVersioned (JS checked the arguments' types)
Napi::Value ToDLPack(const Napi::CallbackInfo& info) {
  refuse_isolated(info, "toDLPack");
  DLPackRequest r;
  r.device = device_arg(info, 0);
  r.base = u64_arg(info, 1, "base");
  r.bytes = u64_arg(info, 2, "bytes");
  r.dtype.code = static_cast<std::uint8_t>(number_arg(info, 3, "code"));
  r.dtype.bits = static_cast<std::uint8_t>(number_arg(info, 4, "bits"));
  r.dtype.lanes = static_cast<std::uint16_t>(number_arg(info, 5, "lanes"));
  r.shape = int64_list(info[6]);
  r.strides = int64_list(info[7]);
  r.byte_offset = u64_arg(info, 8, "byteOffset");
  DLManagedTensorVersioned* t = export_dlpack(process_runtime(), r);
  return Napi::BigInt::New(info.Env(), static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(t)));
}

// releaseExported(device, base) -> whether the memory was freed now (no tensor out)
Napi::Value ReleaseExported(const Napi::CallbackInfo& info) {
  return Napi::Boolean::New(info.Env(), release_exported(runtime(info), device_arg(info, 0), u64_arg(info, 1, "base")));
}

// ipcHandle(device, base) -> Uint8Array: the bytes another process opens
Napi::Value IpcHandle(const Napi::CallbackInfo& info) {
  refuse_isolated(info, "ipcHandle");
  const std::vector<unsigned char> bytes = export_ipc_handle(process_runtime(), device_arg(info, 0), u64_arg(info, 1, "base"));
  Napi::Uint8Array out = Napi::Uint8Array::New(info.Env(), bytes.size());
  std::memcpy(out.Data(), bytes.data(), bytes.size());
  return out;
}

// openIpcHandle(bytes) -> { device, ptr, size } (JS checked that bytes is a Uint8Array)
Napi::Value OpenIpcHandle(const Napi::CallbackInfo& info) {
  refuse_isolated(info, "openIpcHandle");
  Napi::Uint8Array bytes = info[0].As<Napi::Uint8Array>();
  const IpcImport imp = open_ipc_handle(process_runtime(), bytes.Data(), bytes.ByteLength());
  Napi::Object o = Napi::Object::New(info.Env());
  o.Set("device", imp.device);
  o.Set("ptr", static_cast<double>(imp.ptr));
  o.Set("size", static_cast<double>(imp.size));
  return o;
}

// closeIpc(device, ptr): one open of another process's buffer undone
Napi::Value CloseIpc(const Napi::CallbackInfo& info) {
  close_ipc_handle(process_runtime(), device_arg(info, 0), u64_arg(info, 1, "ptr"));
  return info.Env().Undefined();
}

// ipcCollect() -> how many released exports were freed
Napi::Value IpcCollect(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), static_cast<double>(collect_exports(runtime(info))));
}

}  // namespace

void register_interop_functions(Napi::Env env, Napi::Object exports) {
  export_function<AllocatorApi>(env, exports, "allocatorApi");
  export_function<ClientTagName>(env, exports, "clientTagName");
  export_function<Clients>(env, exports, "clients");
  export_function<ToDLPack>(env, exports, "toDLPack");
  export_function<ReleaseExported>(env, exports, "releaseExported");
  export_function<IpcHandle>(env, exports, "ipcHandle");
  export_function<OpenIpcHandle>(env, exports, "openIpcHandle");
  export_function<CloseIpc>(env, exports, "closeIpc");
  export_function<IpcCollect>(env, exports, "ipcCollect");
}

}  // namespace cca::binding
