// The C ABI's face in JS: the table's address for a consumer addon, and what its clients
// hold (their names label their allocations in snapshots built in JS).
#include "interop_functions.h"

#include <cstdint>

#include "args.h"
#include "export.h"
#include "../interop/c_api.h"
#include "../interop/clients.h"

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

}  // namespace

void register_interop_functions(Napi::Env env, Napi::Object exports) {
  export_function<AllocatorApi>(env, exports, "allocatorApi");
  export_function<ClientTagName>(env, exports, "clientTagName");
  export_function<Clients>(env, exports, "clients");
}

}  // namespace cca::binding
