// The native clients of the C ABI: libraries in this process that allocate through the
// allocator under a name. A client's allocations carry its owner id (only it may free
// them) and its name's tag (snapshots, memory_stats and the metrics say whose they are).
// Clients are never destroyed: a closed one's name still labels the memory it left.
#pragma once
#include <atomic>

#include "../common/owner_counters.h"
#include <cstdint>
#include <string>
#include <vector>

#include "../runtime/runtime.h"

namespace cca {

// Owner ids and tags at or above this are clients'; JS environments and JS tags count up
// from 1 and stay below it.
constexpr std::uint32_t kClientIdBase = 0x80000000u;

// Devices a client name keeps figures for: client_open refuses a process with more.
constexpr int kMaxClientDevices = 64;

struct ClientInfo {
  std::uint32_t tag = 0;
  std::string name;
  int open = 0;  // clients open under the name now
  int device = 0;
  std::int64_t bytes = 0, bytes_peak = 0, allocations = 0, allocations_peak = 0;
  std::uint64_t num_allocs = 0, num_frees = 0;
};

}  // namespace cca

// The C ABI's opaque cca_client (include/cca.h).
struct cca_client {
  std::uint32_t owner = 0;
  std::uint32_t tag = 0;
  std::string name;
  std::atomic<bool> open{true};
  cca::Runtime* runtime = nullptr;  // the process runtime, pinned while open
  cca::OwnerCounters* counters = nullptr;  // its name's, one per device index, kept by each device's allocator
};

namespace cca {

// Opens a client on the process runtime (pinning it). InvalidArgumentError for a name
// that is empty, longer than 64 bytes or not printable; ERR_CCA_SIMULATED when the devices
// are simulated and `allow_simulated` is false.
cca_client* open_client(const char* name, bool allow_simulated);
void close_client(cca_client* client);
// The tag of a name (interned: the same name, the same tag), for memory native code other
// than a client allocates under a name (the cuBLAS workspace).
std::uint32_t name_tag(const std::string& name);
// The name a client tag stands for ("" for an unknown tag).
std::string client_tag_name(std::uint32_t tag);
// Per client name (oldest first) and device it allocated on: what its clients hold.
std::vector<ClientInfo> client_infos();

}  // namespace cca
