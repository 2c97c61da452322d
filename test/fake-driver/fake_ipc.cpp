// The fake driver's device memory and its CUDA IPC. Every cuMemAlloc is backed by a memfd
// mapped shared, so a second process can map the same pages: cuIpcGetMemHandle writes this
// process's id and the memfd's descriptor into the 64-byte handle, and cuIpcOpenMemHandle
// in the other process opens /proc/<pid>/fd/<fd> and maps it. Two processes of a test thus
// really share bytes, as on a GPU.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstring>
#include <map>
#include <string>

#include "fake_state.h"

namespace {

constexpr std::uint64_t kIpcMagic = 0x4350496b616b6166ull;  // "fakeIPC" + version 0

struct Backing {
  int fd;
  std::size_t bytes;
};
std::map<unsigned long long, Backing>& backings = *new std::map<unsigned long long, Backing>;  // allocation -> memfd
std::map<unsigned long long, std::size_t>& imported = *new std::map<unsigned long long, std::size_t>;  // mapping -> bytes

struct HandleData {
  std::uint64_t magic;
  std::int64_t pid;
  std::int64_t fd;
  std::uint64_t bytes;
};

struct CUipcMemHandle {
  char reserved[64];
};
static_assert(sizeof(HandleData) <= sizeof(CUipcMemHandle), "the handle holds its data");

}  // namespace

namespace fake {

void raise_descriptor_limit() {
  // One descriptor per live allocation, as the real driver keeps a handle per allocation.
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    setrlimit(RLIMIT_NOFILE, &r);
  }
}

void* backing_alloc(std::size_t size) {
  const std::size_t bytes = (size + 4095) / 4096 * 4096;
  const int fd = memfd_create("fake-cuda", MFD_CLOEXEC);
  if (fd < 0) return nullptr;
  if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    close(fd);
    return nullptr;
  }
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    close(fd);
    return nullptr;
  }
  backings[reinterpret_cast<unsigned long long>(p)] = Backing{fd, bytes};
  return p;
}

void backing_free(void* p) {
  auto it = backings.find(reinterpret_cast<unsigned long long>(p));
  if (it == backings.end()) return;
  munmap(p, it->second.bytes);
  close(it->second.fd);
  backings.erase(it);
}

bool imported_span(unsigned long long p, std::size_t n) {
  auto it = imported.upper_bound(p);
  if (it == imported.begin()) return false;
  --it;
  return p >= it->first && p + n <= it->first + it->second;
}

}  // namespace fake

using namespace fake;

FAKE CUresult cuIpcGetMemHandle(CUipcMemHandle* handle, unsigned long long p) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  auto it = backings.find(p);
  if (it == backings.end()) return kInvalidValue;  // only an allocation's start, as cuMemAlloc gave it
  HandleData d{kIpcMagic, static_cast<std::int64_t>(getpid()), it->second.fd, it->second.bytes};
  std::memset(handle, 0, sizeof *handle);
  std::memcpy(handle->reserved, &d, sizeof d);
  return kSuccess;
}

FAKE CUresult cuIpcOpenMemHandle_v2(unsigned long long* p, CUipcMemHandle handle, unsigned) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  HandleData d{};
  std::memcpy(&d, handle.reserved, sizeof d);
  if (d.magic != kIpcMagic) return kInvalidValue;
  if (d.pid == static_cast<std::int64_t>(getpid())) return kInvalidContext;  // as the driver: not in the exporting process
  const std::string path = "/proc/" + std::to_string(d.pid) + "/fd/" + std::to_string(d.fd);
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) return kInvalidValue;  // the exporter exited, or freed it
  void* mem = mmap(nullptr, d.bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (mem == MAP_FAILED) return kOutOfMemory;
  *p = reinterpret_cast<unsigned long long>(mem);
  imported[*p] = d.bytes;
  return kSuccess;
}

FAKE CUresult cuIpcCloseMemHandle(unsigned long long p) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto it = imported.find(p);
  if (it == imported.end()) return kInvalidValue;
  munmap(reinterpret_cast<void*>(p), it->second);
  imported.erase(it);
  return kSuccess;
}

// Mappings of other processes' memory open here (a test's check that close unmapped).
FAKE std::size_t fake_cuda_open_ipc_mappings() {
  std::lock_guard<std::mutex> lock(mu);
  return imported.size();
}
