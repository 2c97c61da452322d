#include "ipc.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "../common/errors.h"
#include "../common/message_format.h"
#include "exports.h"
#include "../allocator/policy/facets/ipc.h"

namespace cca {

namespace {

constexpr std::uint64_t kWireMagic = 0x316370692d616363ull;  // "cca-ipc1" in memory order

struct Wire {
  std::uint64_t magic;
  std::uint32_t version;
  std::int32_t device;
  std::int64_t pid;
  std::int64_t counter_fd;
  std::uint64_t token;
  std::uint64_t offset;
  std::uint64_t size;
  unsigned char handle[Device::kIpcHandleBytes];
};
static_assert(sizeof(Wire) == kIpcWireBytes, "the wire format");

// The importer's mappings of exporters' counter pages, one per open, by what it opened.
std::mutex& g_mu = *new std::mutex;
std::multimap<std::tuple<Runtime*, int, DevicePtr>, IpcCounterPage*>& g_opens =
    *new std::multimap<std::tuple<Runtime*, int, DevicePtr>, IpcCounterPage*>;

[[noreturn]] void bad_handle(const std::string& why) {
  throw InvalidArgumentError("openIpcHandle: " + why, "ERR_CCA_IPC_HANDLE");
}

}  // namespace

std::vector<unsigned char> export_ipc_handle(Runtime& runtime, int device, DevicePtr base) {
  DeviceCachingAllocator& a = runtime.allocator(device);
  const IpcExport e = IpcFacet(a).export_allocation(base);
  const IpcCounter counter = ipc_counter(runtime, device, base);
  Wire w{};
  w.magic = kWireMagic;
  w.version = 1;
  w.device = device;
  w.pid = static_cast<std::int64_t>(getpid());
  w.counter_fd = counter.fd;
  w.token = counter.token;
  w.offset = e.offset;
  w.size = e.size;
  std::memcpy(w.handle, e.handle, sizeof w.handle);
  std::vector<unsigned char> out(kIpcWireBytes);
  std::memcpy(out.data(), &w, sizeof w);
  return out;
}

IpcImport open_ipc_handle(Runtime& runtime, const unsigned char* bytes, std::size_t length) {
  if (length != kIpcWireBytes) {
    bad_handle("a handle is " + std::to_string(kIpcWireBytes) + " bytes (from buf.ipcHandle()); got " +
               std::to_string(length));
  }
  Wire w{};
  std::memcpy(&w, bytes, sizeof w);
  if (w.magic != kWireMagic) bad_handle("these bytes are not a handle from buf.ipcHandle()");
  if (w.version != 1) bad_handle("handle version " + std::to_string(w.version) + " is newer than this library's (1)");
  if (w.device < 0 || w.device >= runtime.device_count()) {
    bad_handle("the handle names device " + std::to_string(w.device) + "; this process sees " +
               std::to_string(runtime.device_count()));
  }
  if (w.pid == static_cast<std::int64_t>(getpid())) {
    throw InvalidArgumentError("openIpcHandle: the handle was made in this process; use the buffer itself here",
                               "ERR_CCA_IPC_SAME_PROCESS");
  }
  // The exporter's count first: once it is above zero the memory stays allocated.
  const std::string path = "/proc/" + std::to_string(w.pid) + "/fd/" + std::to_string(w.counter_fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    throw InvalidArgumentError("openIpcHandle: process " + std::to_string(w.pid) +
                                   " has exited or freed the buffer (its count of importers is gone)",
                               "ERR_CCA_IPC_STALE");
  }
  void* page = mmap(nullptr, sizeof(IpcCounterPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (page == MAP_FAILED) throw InvalidArgumentError("openIpcHandle: cannot map the exporter's count", "ERR_CCA_IPC_STALE");
  auto* counter = static_cast<IpcCounterPage*>(page);
  if (counter->token != w.token) {
    munmap(page, sizeof(IpcCounterPage));
    throw InvalidArgumentError("openIpcHandle: process " + std::to_string(w.pid) + " no longer exports this buffer",
                               "ERR_CCA_IPC_STALE");
  }
  counter->open.fetch_add(1, std::memory_order_acq_rel);
  IpcImport out;
  out.device = w.device;
  out.size = w.size;
  try {
    out.ptr = IpcFacet(runtime.allocator(w.device)).open(w.handle, w.offset, w.size);
  } catch (...) {
    counter->open.fetch_sub(1, std::memory_order_acq_rel);
    munmap(page, sizeof(IpcCounterPage));
    throw;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  g_opens.emplace(std::make_tuple(&runtime, w.device, out.ptr), counter);
  return out;
}

void close_ipc_handle(Runtime& runtime, int device, DevicePtr ptr) {
  IpcCounterPage* counter = nullptr;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_opens.find(std::make_tuple(&runtime, device, ptr));
    if (it == g_opens.end()) {
      throw InvalidPointerError("close: " + hex(ptr) + " is not another process's buffer open on device " +
                                std::to_string(device));
    }
    counter = it->second;
    g_opens.erase(it);
  }
  IpcFacet(runtime.allocator(device)).close(ptr);  // unmapped first, then the exporter may free it
  counter->open.fetch_sub(1, std::memory_order_acq_rel);
  munmap(counter, sizeof(IpcCounterPage));
}

}  // namespace cca
