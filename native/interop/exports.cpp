#include "exports.h"

#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <mutex>
#include <random>
#include <tuple>
#include <vector>

#include "../common/errors.h"
#include "../common/message_format.h"
#include "../runtime/process_runtime.h"

namespace cca {

namespace {

struct Export {
  int tensors = 0;
  bool released = false;  // JS freed the buffer
  IpcCounter ipc;         // fd -1 until its first IPC export
};

using Key = std::tuple<Runtime*, int, DevicePtr>;
// Never destroyed: a deleter may run at exit.
std::mutex& g_mu = *new std::mutex;
std::map<Key, Export>& g_exports = *new std::map<Key, Export>;
// (runtime generation, device) whose allocator collects exports when short of memory. The
// generation, not the runtime's address: a later runtime may be built where a freed one was.
std::map<std::pair<std::uint32_t, int>, bool>& g_callbacks = *new std::map<std::pair<std::uint32_t, int>, bool>;

bool held(const Export& e) {
  return e.tensors > 0 || (e.ipc.open != nullptr && e.ipc.open->load(std::memory_order_acquire) > 0);
}

void drop_counter(IpcCounter& c) {
  if (c.open != nullptr) munmap(reinterpret_cast<void*>(c.open), sizeof(IpcCounterPage));
  if (c.fd >= 0) close(c.fd);
  c = IpcCounter{};
}

void free_memory(Runtime* runtime, int device, DevicePtr base) {
  try {
    runtime->allocator(device).free(base);
  } catch (...) {
    // Nothing to tell from here (a deleter, a callback); the allocation stays in snapshots.
  }
}

}  // namespace

void hold_tensor(Runtime& runtime, int device, DevicePtr base) {
  std::lock_guard<std::mutex> lock(g_mu);
  Export& e = g_exports[Key{&runtime, device, base}];
  if (e.released) throw InvalidPointerError("toDLPack: the buffer at " + hex(base) + " was freed");
  ++e.tensors;
}

void drop_tensor(Runtime& runtime, int device, DevicePtr base) {
  bool free_now = false;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_exports.find(Key{&runtime, device, base});
    if (it == g_exports.end()) return;
    --it->second.tensors;
    if (!held(it->second) && (it->second.released || it->second.ipc.fd < 0)) {
      free_now = it->second.released;
      drop_counter(it->second.ipc);
      g_exports.erase(it);
    }
  }
  if (free_now) free_memory(&runtime, device, base);
}

IpcCounter ipc_counter(Runtime& runtime, int device, DevicePtr base) {
  std::lock_guard<std::mutex> lock(g_mu);
  Export& e = g_exports[Key{&runtime, device, base}];
  if (e.released) throw InvalidPointerError("ipcHandle: the buffer at " + hex(base) + " was freed");
  if (e.ipc.fd < 0) {
    const int fd = memfd_create("cca-ipc-counter", MFD_CLOEXEC);
    void* page = MAP_FAILED;
    if (fd >= 0 && ftruncate(fd, sizeof(IpcCounterPage)) == 0) {
      page = mmap(nullptr, sizeof(IpcCounterPage), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    }
    if (page == MAP_FAILED) {
      if (fd >= 0) close(fd);
      if (e.tensors == 0) g_exports.erase(Key{&runtime, device, base});
      throw InvalidArgumentError("ipcHandle: no shared memory for the importers' count (memfd_create)",
                                 "ERR_CCA_IPC_UNSUPPORTED");
    }
    auto* p = new (page) IpcCounterPage{};
    p->token = std::random_device{}() * 0x100000001ull ^ static_cast<std::uint64_t>(base);
    e.ipc = IpcCounter{fd, p->token, &p->open};
  }
  // The allocator collects released exports itself when it runs short of memory.
  bool& registered = g_callbacks[{runtime_generation(), device}];
  if (!registered) {
    registered = true;
    Runtime* r = &runtime;
    runtime.allocator(device).add_free_memory_callback([r] { return collect_exports(*r) > 0; });
  }
  return e.ipc;
}

bool release_exported(Runtime& runtime, int device, DevicePtr base) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = g_exports.find(Key{&runtime, device, base});
    if (it != g_exports.end()) {
      if (it->second.released) throw InvalidPointerError("free: the buffer at " + hex(base) + " was already freed");
      if (held(it->second)) {
        it->second.released = true;
        return false;
      }
      drop_counter(it->second.ipc);
      g_exports.erase(it);
    }
  }
  runtime.allocator(device).free(base);
  return true;
}

std::size_t collect_exports(Runtime& runtime) {
  std::vector<std::pair<int, DevicePtr>> due;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    for (auto it = g_exports.begin(); it != g_exports.end();) {
      const auto& [r, device, base] = it->first;
      if (r == &runtime && it->second.released && !held(it->second)) {
        due.emplace_back(device, base);
        drop_counter(it->second.ipc);
        it = g_exports.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const auto& [device, base] : due) free_memory(&runtime, device, base);
  return due.size();
}

}  // namespace cca
