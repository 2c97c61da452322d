// The C ABI (include/cca.h). Each entry point catches everything: no C++ exception may
// cross into a C caller, so each failure becomes a status and this thread's last_error().
#include "c_api.h"
#include "../allocator/policy/facets/mem_pools.h"

#include <cstdio>
#include <cstring>
#include <new>

#include "../common/errors.h"
#include "../allocator/policy/facets/address_lookups.h"
#include "../allocator/policy/facets/client_calls.h"
#include "../runtime/process_runtime.h"
#include "thread_frees.h"
#include "clients.h"
#include "client_captures.h"
#include "native_stacks.h"

namespace cca {

namespace {

// A plain array so that a call failing while the thread exits can still say why.
thread_local char t_last_error[1024];

cca_status fail(cca_status status, const char* message) {
  std::snprintf(t_last_error, sizeof t_last_error, "%s", message);
  return status;
}

cca_status status_of(const AllocatorError& e) {
  const std::string& code = e.code();
  if (code == "ERR_CCA_INVALID_DEVICE") return CCA_ERR_INVALID_DEVICE;
  if (code == "ERR_CCA_INVALID_STREAM") return CCA_ERR_INVALID_STREAM;
  if (code == "ERR_CCA_SIMULATED") return CCA_ERR_SIMULATED;
  if (code == "ERR_CCA_CAPTURE_UNSUPPORTED" || code == "ERR_CCA_CAPTURE_INVALIDATED") return CCA_ERR_CAPTURE;
  switch (e.kind()) {
    case ErrorKind::kOutOfMemory: return CCA_ERR_OUT_OF_MEMORY;
    case ErrorKind::kPointer: return CCA_ERR_INVALID_POINTER;
    case ErrorKind::kDevice: return CCA_ERR_DEVICE;
    case ErrorKind::kArgument: return CCA_ERR_INVALID_ARGUMENT;
    default: return CCA_ERR_INTERNAL;
  }
}

// Every entry point first hands over the frees JS made on this thread and has not passed
// on yet (thread_frees.h), so an addon called from JS right after a free sees it. A free
// the allocator refuses there is not this caller's error, so it is not its status: it
// leaves the list unreported, as no DeviceBuffer can list such a pointer (only code writing
// the raw list can); the frees after it are handed over by the next call.
template <class F>
cca_status guarded(F&& f) noexcept {
  try {
    try {
      hand_over_thread_frees();
    } catch (...) {
    }
    f();
    return CCA_OK;
  } catch (const AllocatorError& e) {
    return fail(status_of(e), e.what());
  } catch (const std::bad_alloc&) {
    return fail(CCA_ERR_OUT_OF_MEMORY, "out of host memory");
  } catch (const std::exception& e) {
    return fail(CCA_ERR_INTERNAL, e.what());
  } catch (...) {
    return fail(CCA_ERR_INTERNAL, "an unknown exception");
  }
}

bool usable(const cca_client* client) { return client != nullptr && client->open.load(std::memory_order_relaxed); }
cca_status closed_client() { return fail(CCA_ERR_CLIENT, "the client is null or was closed (client_open gives one)"); }

DeviceCachingAllocator& allocator(int device) { return process_runtime().allocator(device); }

cca_status api_client_open(const char* name, std::uint32_t flags, cca_client** out) {
  if (out == nullptr) return fail(CCA_ERR_INVALID_ARGUMENT, "client_open: `out` is NULL");
  *out = nullptr;
  if ((flags & ~CCA_CLIENT_ALLOW_SIMULATED) != 0) {
    return fail(CCA_ERR_INVALID_ARGUMENT, "client_open: unknown flags (only CCA_CLIENT_ALLOW_SIMULATED is defined)");
  }
  return guarded([&] { *out = open_client(name, (flags & CCA_CLIENT_ALLOW_SIMULATED) != 0); });
}

void api_client_close(cca_client* client) {
  if (client != nullptr) close_client(client);
}

cca_status api_malloc(cca_client* client, int device, std::size_t size, cca_stream stream, cca_ptr* out) {
  if (!usable(client)) return closed_client();
  if (out == nullptr) return fail(CCA_ERR_INVALID_ARGUMENT, "malloc: `out` is NULL");
  return guarded([&] {
    DeviceCachingAllocator& a = client->runtime->allocator(device);
    // The caller's native stack while history keeps allocation stacks (context 'state' on).
    const CallContext ctx{native_stacks().capture_if(1), client->tag};
    *out = a.malloc_counted(size, stream, client->owner, ctx,
                            client->counters[static_cast<std::size_t>(device)]);
  });
}

cca_status api_free(cca_client* client, int device, cca_ptr ptr) {
  if (!usable(client)) return closed_client();
  if (ptr == 0) return CCA_OK;
  return guarded([&] {
    DeviceCachingAllocator& a = client->runtime->allocator(device);
    const CallContext ctx{native_stacks().capture_if(3), client->tag};  // free stacks: context 'all'
    ClientCalls(a).free_owned(ptr, client->owner, ctx, client->counters[static_cast<std::size_t>(device)]);
  });
}

cca_status api_record_stream(int device, cca_ptr ptr, cca_stream stream) {
  return guarded([&] { allocator(device).record_stream(ptr, stream); });
}

cca_status api_get_allocation(int device, cca_ptr inside, cca_ptr* base, std::size_t* size, cca_stream* stream) {
  DevicePtr b = 0;
  std::uint64_t n = 0;
  StreamId s = 0;
  bool found = false;
  cca_status status = guarded([&] { found = AddressLookups(allocator(device)).find_allocation(inside, &b, &n, &s); });
  if (status != CCA_OK) return status;
  if (!found) {
    char message[160];
    std::snprintf(message, sizeof message, "get_allocation: 0x%llx is inside no live allocation on device %d",
                  static_cast<unsigned long long>(inside), device);
    return fail(CCA_ERR_INVALID_POINTER, message);
  }
  if (base != nullptr) *base = b;
  if (size != nullptr) *size = static_cast<std::size_t>(n);
  if (stream != nullptr) *stream = s;
  return CCA_OK;
}

cca_status api_stream_adopt(int device, cca_stream stream) {
  return guarded([&] { allocator(device).adopt_stream(stream); });
}

cca_status api_stream_release(int device, cca_stream stream) {
  return guarded([&] { allocator(device).release_stream(stream); });
}

cca_status api_empty_cache(int device) {
  return guarded([&] { allocator(device).empty_cache(); });
}

cca_status api_mem_get_info(int device, std::size_t* free_bytes, std::size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) {
    return fail(CCA_ERR_INVALID_ARGUMENT, "mem_get_info: `free_bytes` and `total_bytes` must not be NULL");
  }
  return guarded([&] { allocator(device).mem_get_info(free_bytes, total_bytes); });
}

const char* api_last_error() { return t_last_error; }

cca_status api_capture_begin(int device, cca_stream stream, std::uint64_t pool, std::uint64_t* pool_out) {
  if (pool > UINT32_MAX) return fail(CCA_ERR_INVALID_ARGUMENT, "capture_begin: `pool` is not a pool id");
  return guarded([&] {
    const std::uint32_t id = begin_client_capture(process_runtime().allocator(device), device, stream,
                                                  static_cast<std::uint32_t>(pool));
    if (pool_out != nullptr) *pool_out = id;
  });
}

cca_status api_capture_end(int device, cca_stream stream) {
  return guarded([&] { end_client_capture(process_runtime().allocator(device), device, stream); });
}

cca_status api_pool_release(int device, std::uint64_t pool) {
  if (pool == 0 || pool > UINT32_MAX) return fail(CCA_ERR_INVALID_ARGUMENT, "pool_release: `pool` is not a pool id");
  return guarded([&] { MemPools(allocator(device)).release_pool(static_cast<std::uint32_t>(pool)); });
}

const cca_api_v1 g_table = {
    CCA_API_MAGIC,        CCA_API_MAJOR,        1u,
    sizeof(cca_api_v1),   api_client_open,      api_client_close,
    api_malloc,           api_free,             api_record_stream,
    api_get_allocation,   api_stream_adopt,     api_stream_release,
    api_empty_cache,      api_mem_get_info,     api_last_error,
    // minor 1
    api_capture_begin,    api_capture_end,      api_pool_release,
};

}  // namespace

const cca_api_v1* c_api_table() { return &g_table; }

}  // namespace cca
