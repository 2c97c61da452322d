// A fake CUDA driver for tests: a shared library exporting the driver entry points the
// cuda backend uses, backed by host memory, so that backend runs in CI with no GPU
// (CCA_LIBCUDA_PATH=.../libfakecuda.so). Device pointers are host addresses, so copies
// really move bytes. Not a simulator of GPU behaviour beyond what the backend needs.
//
// Settings (environment, read at cuInit): FAKE_CUDA_DEVICES (default 1, 0 for none),
// FAKE_CUDA_CAPACITY_MB (default 256), FAKE_CUDA_INIT_ERROR (a CUresult cuInit returns).
// Switches (exported, for tests): fake_cuda_fail_next_allocs(n), fake_cuda_fail_next_event_queries(n),
// fake_cuda_hold_stream(stream, held), fake_cuda_complete_stream(stream), fake_cuda_live_allocations(),
// fake_cuda_live_host_allocations(), fake_cuda_driver_calls(), fake_cuda_foreign_context_calls(),
// fake_cuda_open_ipc_mappings(). Device memory and CUDA IPC are in fake_ipc.cpp.
// This file holds devices and memory; streams and events are in fake_streams.cpp, modules
// and kernels (CPU functions) in fake_kernels.cpp, their shared state in fake_state.h.
#include <sys/mman.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "fake_state.h"

namespace fake {
std::mutex& mu = *new std::mutex;
std::set<Stream*>& streams = *new std::set<Stream*>;
std::set<Event*>& events = *new std::set<Event*>;
Stream& default_stream = *new Stream;
thread_local int current_device = -1;
thread_local Ctx* current_context = nullptr;
std::atomic<std::uint64_t> foreign_context_calls{0};
void note_context() {
  if (current_context != nullptr && !current_context->primary) foreign_context_calls.fetch_add(1);
}
CUresult sticky = kSuccess;
std::atomic<std::uint64_t> driver_calls{0};
void count_call() { driver_calls.fetch_add(1, std::memory_order_relaxed); }
}  // namespace fake

using namespace fake;

namespace {

bool initialized = false;
int device_count = 1;
std::size_t capacity = std::size_t{256} << 20;
std::vector<Ctx>& contexts = *new std::vector<Ctx>;
std::vector<std::size_t>& used = *new std::vector<std::size_t>;
std::map<unsigned long long, std::pair<int, std::size_t>>& allocations =
    *new std::map<unsigned long long, std::pair<int, std::size_t>>;  // ptr -> (device, size)
int fail_allocs = 0;
std::set<void*>& host_blocks = *new std::set<void*>;

// Takes `size` bytes of the current device's capacity, honouring injected failures; the
// caller holds `mu`. Shared by cuMemAlloc and cuMemCreate.
CUresult take_capacity(std::size_t size) {
  if (current_device < 0) return kInvalidValue;
  auto& u = used[static_cast<std::size_t>(current_device)];
  if (fail_allocs > 0) {
    --fail_allocs;
    return kOutOfMemory;
  }
  if (size == 0 || u + size > capacity) return kOutOfMemory;
  u += size;
  return kSuccess;
}

std::size_t env_size(const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? static_cast<std::size_t>(std::strtoull(v, nullptr, 10)) : fallback;
}

}  // namespace


FAKE CUresult cuInit(unsigned) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  if (const char* e = std::getenv("FAKE_CUDA_INIT_ERROR")) return std::atoi(e);
  // As the real driver's: a second cuInit (another library loading the driver, as the C
  // ABI's consumer does) keeps the state. Resetting it here once dropped the memory in use,
  // so later frees took `used` below zero and every allocation failed.
  if (initialized) return kSuccess;
  device_count = static_cast<int>(env_size("FAKE_CUDA_DEVICES", 1));
  capacity = env_size("FAKE_CUDA_CAPACITY_MB", 256) << 20;
  contexts.assign(static_cast<std::size_t>(device_count), Ctx{});
  for (int i = 0; i < device_count; ++i) contexts[static_cast<std::size_t>(i)] = Ctx{i, true};
  used.assign(static_cast<std::size_t>(device_count), 0);
  fake::raise_descriptor_limit();
  initialized = true;
  return kSuccess;
}

FAKE CUresult cuDriverGetVersion(int* v) {
  fake::count_call();
  *v = 12040;
  return kSuccess;
}

FAKE CUresult cuGetErrorName(CUresult r, const char** s) {
  fake::count_call();
  switch (r) {
    case kSuccess: *s = "CUDA_SUCCESS"; break;
    case kInvalidValue: *s = "CUDA_ERROR_INVALID_VALUE"; break;
    case kOutOfMemory: *s = "CUDA_ERROR_OUT_OF_MEMORY"; break;
    case kNotInitialized: *s = "CUDA_ERROR_NOT_INITIALIZED"; break;
    case kNoDevice: *s = "CUDA_ERROR_NO_DEVICE"; break;
    case kInvalidDevice: *s = "CUDA_ERROR_INVALID_DEVICE"; break;
    case kInvalidHandle: *s = "CUDA_ERROR_INVALID_HANDLE"; break;
    case kNotReady: *s = "CUDA_ERROR_NOT_READY"; break;
    case kLaunchFailed: *s = "CUDA_ERROR_LAUNCH_FAILED"; break;
    case kInvalidImage: *s = "CUDA_ERROR_INVALID_IMAGE"; break;
    case kInvalidContext: *s = "CUDA_ERROR_INVALID_CONTEXT"; break;
    case kNotFound: *s = "CUDA_ERROR_NOT_FOUND"; break;
    case kIllegalAddress: *s = "CUDA_ERROR_ILLEGAL_ADDRESS"; break;
    case fake::kCaptureUnsupported: *s = "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED"; break;
    case fake::kCaptureInvalidated: *s = "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED"; break;
    case fake::kCapturedEvent: *s = "CUDA_ERROR_CAPTURED_EVENT"; break;
    case fake::kIllegalState: *s = "CUDA_ERROR_ILLEGAL_STATE"; break;
    default: *s = nullptr; return kInvalidValue;
  }
  return kSuccess;
}

FAKE CUresult cuGetErrorString(CUresult r, const char** s) {
  fake::count_call();
  *s = r == kOutOfMemory ? "out of memory" : r == kNotReady ? "device not ready" : "fake driver error";
  return kSuccess;
}

FAKE CUresult cuDeviceGetCount(int* n) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  if (!initialized) return kNotInitialized;
  *n = device_count;
  return kSuccess;
}

FAKE CUresult cuDeviceGet(int* d, int ordinal) {
  fake::count_call();
  if (ordinal < 0 || ordinal >= device_count) return kInvalidDevice;
  *d = ordinal;
  return kSuccess;
}

FAKE CUresult cuDeviceGetName(char* name, int len, int d) {
  fake::count_call();
  std::string n = "Fake CUDA Device " + std::to_string(d) + " (test driver)";
  std::strncpy(name, n.c_str(), static_cast<std::size_t>(len));
  return kSuccess;
}

FAKE CUresult cuDeviceTotalMem_v2(std::size_t* bytes, int) {
  fake::count_call();
  *bytes = capacity;
  return kSuccess;
}

FAKE CUresult cuDeviceGetAttribute(int* v, int attr, int) {
  fake::count_call();
  // Like an H100: compute capability 9.0 and its launch limits.
  switch (attr) {
    case 75: *v = 9; break;
    case 76: *v = 0; break;
    case 1: *v = 1024; break;                   // max threads per block
    case 2: case 3: *v = 1024; break;           // max block x, y
    case 4: *v = 64; break;                     // max block z
    case 5: *v = 2147483647; break;             // max grid x
    case 6: case 7: *v = 65535; break;          // max grid y, z
    case 97: *v = 232448; break;                // shared memory per block, opted in
    default: *v = 0;
  }
  return kSuccess;
}

FAKE CUresult cuDevicePrimaryCtxRetain(void** ctx, int d) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  if (d < 0 || d >= device_count) return kInvalidDevice;
  *ctx = &contexts[static_cast<std::size_t>(d)];
  return kSuccess;
}

FAKE CUresult cuDevicePrimaryCtxRelease_v2(int) { return kSuccess; }

FAKE CUresult cuCtxSetCurrent(void* ctx) {
  fake::count_call();
  current_context = static_cast<Ctx*>(ctx);
  current_device = ctx ? static_cast<Ctx*>(ctx)->device : -1;
  return kSuccess;
}

FAKE CUresult cuCtxGetCurrent(void** ctx) {
  fake::count_call();
  *ctx = current_context;
  return kSuccess;
}

// A context of the caller's own (not the device's primary one), made current as the real
// cuCtxCreate makes it: what another library switching contexts under the allocator does.
FAKE CUresult cuCtxCreate_v2(void** ctx, unsigned, int d) {
  fake::count_call();
  if (d < 0 || d >= device_count) return kInvalidDevice;
  auto* c = new Ctx{d, false};
  current_context = c;
  current_device = d;
  *ctx = c;
  return kSuccess;
}

FAKE CUresult cuCtxDestroy_v2(void* ctx) {
  fake::count_call();
  auto* c = static_cast<Ctx*>(ctx);
  if (c == nullptr || c->primary) return kInvalidValue;
  if (current_context == c) {
    current_context = nullptr;
    current_device = -1;
  }
  delete c;
  return kSuccess;
}

FAKE CUresult cuCtxSynchronize() {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  if (fake::refused_by_capture()) return fake::kCaptureUnsupported;
  complete(&default_stream);
  for (Stream* st : streams) complete(st);
  FAKE_STICKY();
  return kSuccess;
}

FAKE CUresult cuMemAlloc_v2(unsigned long long* p, std::size_t size) {
  fake::count_call();
  fake::note_context();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  if (fake::refused_by_capture()) return fake::kCaptureUnsupported;
  if (CUresult r = take_capacity(size); r != kSuccess) return r;
  void* mem = fake::backing_alloc(size);
  if (mem == nullptr) {
    used[static_cast<std::size_t>(current_device)] -= size;
    return kOutOfMemory;
  }
  *p = reinterpret_cast<unsigned long long>(mem);
  allocations[*p] = {current_device, size};
  return kSuccess;
}

FAKE CUresult cuMemFree_v2(unsigned long long p) {
  fake::count_call();
  fake::note_context();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  if (fake::refused_by_capture()) return fake::kCaptureUnsupported;
  auto it = allocations.find(p);
  if (it == allocations.end()) return kInvalidValue;
  used[static_cast<std::size_t>(it->second.first)] -= it->second.second;
  allocations.erase(it);
  fake::backing_free(reinterpret_cast<void*>(p));
  return kSuccess;
}

FAKE CUresult cuMemGetInfo_v2(std::size_t* free_bytes, std::size_t* total) {
  fake::count_call();
  fake::note_context();
  std::lock_guard<std::mutex> lock(mu);
  if (current_device < 0) return kInvalidValue;
  *total = capacity;
  *free_bytes = capacity - used[static_cast<std::size_t>(current_device)];
  return kSuccess;
}

namespace {
struct Physical {
  int device;
  std::size_t size;
};
std::map<unsigned long long, std::size_t>& reservations = *new std::map<unsigned long long, std::size_t>;
std::map<unsigned long long, std::size_t>& mapped = *new std::map<unsigned long long, std::size_t>;  // at -> size

bool within(const std::map<unsigned long long, std::size_t>& ranges, unsigned long long p, std::size_t n) {
  auto it = ranges.upper_bound(p);
  if (it == ranges.begin()) return false;
  --it;
  return p >= it->first && p + n <= it->first + it->second;
}

// Whether [p, p + n) is covered by back-to-back mapped VMM ranges (as on a GPU, a copy may
// cross pages mapped separately).
bool mapped_span(unsigned long long p, std::size_t n) {
  auto it = mapped.upper_bound(p);
  if (it == mapped.begin()) return false;
  --it;
  unsigned long long at = p;
  const unsigned long long end = p + n;
  while (it != mapped.end() && it->first <= at && at < it->first + it->second) {
    at = it->first + it->second;
    if (at >= end) return true;
    ++it;
  }
  return false;
}

}  // namespace

// Whether [p, p + n) lies inside one live allocation or mapped VMM memory.
bool fake::inside(unsigned long long p, std::size_t n) {
  auto it = allocations.upper_bound(p);
  if (it != allocations.begin()) {
    --it;
    if (p >= it->first && p + n <= it->first + it->second.second) return true;
  }
  return mapped_span(p, n) || imported_span(p, n);
}

// Copies and fills run in stream order, like the driver's; the allocator waits for them.
FAKE CUresult cuMemcpyHtoDAsync_v2(unsigned long long dst, const void* src, std::size_t n, void* s) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  if (!inside(dst, n)) return kInvalidValue;
  enqueue(st, Op{[=] { std::memcpy(reinterpret_cast<void*>(dst), src, n); }});
  return kSuccess;
}

FAKE CUresult cuMemcpyDtoHAsync_v2(void* dst, unsigned long long src, std::size_t n, void* s) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  if (!inside(src, n)) return kInvalidValue;
  enqueue(st, Op{[=] { std::memcpy(dst, reinterpret_cast<const void*>(src), n); }});
  return kSuccess;
}

FAKE CUresult cuMemcpyDtoDAsync_v2(unsigned long long dst, unsigned long long src, std::size_t n, void* s) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  if (!inside(dst, n) || !inside(src, n)) return kInvalidValue;
  enqueue(st, Op{[=] { std::memmove(reinterpret_cast<void*>(dst), reinterpret_cast<const void*>(src), n); }});
  return kSuccess;
}

// Pinned host memory is plain host memory here; the fake counts what is live.
FAKE CUresult cuMemHostAlloc(void** p, std::size_t size, unsigned) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  *p = std::aligned_alloc(4096, (size + 4095) / 4096 * 4096);
  if (*p == nullptr) return kOutOfMemory;
  host_blocks.insert(*p);
  return kSuccess;
}

FAKE CUresult cuMemFreeHost(void* p) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  if (!host_blocks.erase(p)) return kInvalidValue;
  std::free(p);
  return kSuccess;
}

FAKE CUresult cuMemsetD8Async(unsigned long long dst, unsigned char v, std::size_t n, void* s) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Stream* st = stream_of(s);
  if (st == nullptr) return kInvalidHandle;
  if (!inside(dst, n)) return kInvalidValue;
  enqueue(st, Op{[=] { std::memset(reinterpret_cast<void*>(dst), v, n); }});
  return kSuccess;
}

// --- virtual memory: reserved ranges are PROT_NONE mappings; cuMemMap makes pages usable ---
FAKE CUresult cuMemGetAllocationGranularity(std::size_t* g, const void*, int) {
  fake::count_call();
  *g = std::size_t{2} << 20;
  return kSuccess;
}

FAKE CUresult cuMemAddressReserve(unsigned long long* p, std::size_t size, std::size_t, unsigned long long,
                                  unsigned long long) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  void* at = mmap(nullptr, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (at == MAP_FAILED) return kOutOfMemory;
  *p = reinterpret_cast<unsigned long long>(at);
  reservations[*p] = size;
  return kSuccess;
}

FAKE CUresult cuMemAddressFree(unsigned long long p, std::size_t size) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto it = reservations.find(p);
  if (it == reservations.end() || it->second != size) return kInvalidValue;
  munmap(reinterpret_cast<void*>(p), size);
  reservations.erase(it);
  return kSuccess;
}

FAKE CUresult cuMemCreate(unsigned long long* handle, std::size_t size, const void*, unsigned long long) {
  fake::count_call();
  fake::note_context();
  std::lock_guard<std::mutex> lock(mu);
  if (CUresult r = take_capacity(size); r != kSuccess) return r;
  *handle = reinterpret_cast<unsigned long long>(new Physical{current_device, size});
  return kSuccess;
}

FAKE CUresult cuMemRelease(unsigned long long handle) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* ph = reinterpret_cast<Physical*>(handle);
  used[static_cast<std::size_t>(ph->device)] -= ph->size;
  delete ph;
  return kSuccess;
}

FAKE CUresult cuMemMap(unsigned long long at, std::size_t size, std::size_t, unsigned long long, unsigned long long) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  if (!within(reservations, at, size) || within(mapped, at, 1)) return kInvalidValue;
  if (mprotect(reinterpret_cast<void*>(at), size, PROT_READ | PROT_WRITE) != 0) return kOutOfMemory;
  mapped[at] = size;
  return kSuccess;
}

FAKE CUresult cuMemSetAccess(unsigned long long at, std::size_t size, const void*, std::size_t) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  return within(mapped, at, size) ? kSuccess : kInvalidValue;
}

FAKE CUresult cuMemUnmap(unsigned long long at, std::size_t size) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto it = mapped.find(at);
  if (it == mapped.end() || it->second != size) return kInvalidValue;
  madvise(reinterpret_cast<void*>(at), size, MADV_DONTNEED);
  mprotect(reinterpret_cast<void*>(at), size, PROT_NONE);
  mapped.erase(it);
  return kSuccess;
}

// --- switches for tests ---
FAKE void fake_cuda_fail_next_allocs(int n) {
  std::lock_guard<std::mutex> lock(mu);
  fail_allocs = n;
}
FAKE std::uint64_t fake_cuda_driver_calls() { return fake::driver_calls.load(); }
// Calls that allocate, free or queue work made while a context other than a device's
// primary one was current (the allocator must never make them: 0 in every test).
FAKE std::uint64_t fake_cuda_foreign_context_calls() { return fake::foreign_context_calls.load(); }

FAKE std::size_t fake_cuda_live_host_allocations() {
  std::lock_guard<std::mutex> lock(mu);
  return host_blocks.size();
}
FAKE std::size_t fake_cuda_live_allocations() {
  std::lock_guard<std::mutex> lock(mu);
  return allocations.size();
}
