#include "clients.h"

#include <mutex>
#include <unordered_map>

#include "../common/errors.h"
#include "../allocator/policy/facets/client_calls.h"
#include "../runtime/process_runtime.h"

namespace cca {

namespace {

constexpr std::size_t kMaxNameBytes = 64;

// Never destroyed: a consumer may close its client while the process exits.
std::mutex& g_mu = *new std::mutex;
struct NameEntry {
  std::string name;
  int open = 0;
  OwnerCounters counters[kMaxClientDevices];
};
// Every client ever opened, kept (about 64 bytes each) so that a call with a closed one is
// refused by its flag rather than read freed memory.
std::vector<cca_client*>& g_clients = *new std::vector<cca_client*>;
std::vector<NameEntry*>& g_names = *new std::vector<NameEntry*>;  // tag - kClientIdBase -> entry
std::unordered_map<std::string, std::uint32_t>& g_tags = *new std::unordered_map<std::string, std::uint32_t>;

void check_name(const char* name) {
  if (name == nullptr || *name == '\0') throw InvalidArgumentError("client_open: the name is empty; name the library that allocates");
  std::size_t n = 0;
  for (const char* c = name; *c != '\0'; ++c, ++n) {
    if (n >= kMaxNameBytes) throw InvalidArgumentError("client_open: the name is longer than 64 bytes");
    const auto u = static_cast<unsigned char>(*c);
    if (u < 0x20 || u == 0x7f) throw InvalidArgumentError("client_open: the name holds a control character");
  }
}

}  // namespace

cca_client* open_client(const char* name, bool allow_simulated) {
  check_name(name);
  Runtime& runtime = pin_process_runtime();
  if (runtime.platform().backend() == "sim" && !allow_simulated) {
    unpin_process_runtime();
    throw InvalidArgumentError("client_open: this process's devices are simulated (" + runtime.selection_note() +
                                   "), so the memory would not be real; pass CCA_CLIENT_ALLOW_SIMULATED to accept that "
                                   "(tests without a GPU)",
                               "ERR_CCA_SIMULATED");
  }
  if (runtime.device_count() > kMaxClientDevices) {
    unpin_process_runtime();
    throw InvalidArgumentError("client_open: the C ABI serves at most 64 devices");
  }
  auto* client = new cca_client;
  client->name = name;
  client->runtime = &runtime;
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_tags.find(client->name);
  if (it == g_tags.end()) {
    it = g_tags.emplace(client->name, kClientIdBase + static_cast<std::uint32_t>(g_names.size())).first;
    g_names.push_back(new NameEntry{client->name, 0, {}});
  }
  client->tag = it->second;
  NameEntry& entry = *g_names[client->tag - kClientIdBase];
  ++entry.open;
  client->counters = entry.counters;
  client->owner = kClientIdBase + static_cast<std::uint32_t>(g_clients.size());
  g_clients.push_back(client);
  return client;
}

void close_client(cca_client* client) {
  if (!client->open.exchange(false)) return;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    --g_names[client->tag - kClientIdBase]->open;
  }
  unpin_process_runtime();
}

std::uint32_t name_tag(const std::string& name) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = g_tags.find(name);
  if (it == g_tags.end()) {
    it = g_tags.emplace(name, kClientIdBase + static_cast<std::uint32_t>(g_names.size())).first;
    g_names.push_back(new NameEntry{name, 0, {}});
  }
  return it->second;
}

std::string client_tag_name(std::uint32_t tag) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (tag < kClientIdBase || tag - kClientIdBase >= g_names.size()) return "";
  return g_names[tag - kClientIdBase]->name;
}

std::vector<ClientInfo> client_infos() {
  // Never builds the runtime: memory_stats() in an environment with devices of its own (a
  // replay worker) asks this too, and must not bring up the process's GPUs.
  Runtime* runtime = current_process_runtime();
  std::lock_guard<std::mutex> lock(g_mu);
  std::vector<ClientInfo> out;
  for (std::size_t i = 0; i < g_names.size(); ++i) {
    const NameEntry& e = *g_names[i];
    for (int d = 0; d < kMaxClientDevices; ++d) {
      // Each device's allocator writes its counters under its lock; read them under it too.
      // (A replaced or shut-down runtime's: its clients were all closed first, so no writer.)
      const OwnerCounters c = runtime != nullptr && d < runtime->device_count()
                                  ? ClientCalls(runtime->allocator(d)).read_counters(e.counters[d])
                                  : e.counters[d];
      if (c.num_allocs == 0) continue;  // never allocated there
      ClientInfo info;
      info.tag = kClientIdBase + static_cast<std::uint32_t>(i);
      info.name = e.name;
      info.open = e.open;
      info.device = d;
      info.bytes = c.bytes;
      info.bytes_peak = c.bytes_peak;
      info.allocations = c.allocations;
      info.allocations_peak = c.allocations_peak;
      info.num_allocs = c.num_allocs;
      info.num_frees = c.num_frees;
      out.push_back(std::move(info));
    }
  }
  return out;
}

}  // namespace cca
