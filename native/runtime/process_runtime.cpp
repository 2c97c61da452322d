#include "process_runtime.h"

#include <atomic>
#include <memory>
#include <mutex>

#include "../common/errors.h"
#include "../device/select.h"

namespace cca {

namespace {

std::mutex g_mu;
// Never destroyed by static destruction: shutdown_runtime() releases it when the last
// environment goes, and a process.exit() that skips that leaves it to the OS rather than
// call the driver while the process (and maybe the driver) is being torn down.
std::unique_ptr<Runtime>& g_runtime = *new std::unique_ptr<Runtime>;
std::atomic<Runtime*> g_current{nullptr};
std::atomic<std::uint32_t> g_generation{1};          // the last number handed out
std::atomic<std::uint32_t> g_process_generation{1};  // the process runtime's
int g_pins = 0;                                       // open native clients and DLPack tensors; under g_mu

std::unique_ptr<Runtime> build(const std::string& kind, const SimOptions& sim) {
  AllocatorConfig config = AllocatorConfig::from_environment();
  PlatformChoice choice = choose_platform(kind, sim);
  return std::make_unique<Runtime>(std::move(choice.platform), config, std::move(choice.note));
}

// The process runtime, built on first use; the caller holds g_mu.
Runtime& process_runtime_locked() {
  if (!g_runtime) {
    g_runtime = build(device_kind_from_environment(), sim_options_from_environment());
    g_current.store(g_runtime.get(), std::memory_order_release);
  }
  return *g_runtime;
}

}  // namespace

Runtime& process_runtime() {
  if (Runtime* r = g_current.load(std::memory_order_acquire)) return *r;
  std::lock_guard<std::mutex> lock(g_mu);
  return process_runtime_locked();
}

Runtime* current_process_runtime() { return g_current.load(std::memory_order_acquire); }

void replace_runtime(const std::string& kind, const SimOptions& sim) {
  std::unique_ptr<Runtime> fresh = build(kind, sim);  // may throw: the old one stays
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_pins > 0) {
    throw InvalidArgumentError(std::to_string(g_pins) + " holder(s) of this process's devices are out (native clients of "
                               "the C ABI, DLPack tensors): close the clients (client_close) and let the tensors' "
                               "deleters run before replacing the devices",
                               "ERR_CCA_CLIENTS_OPEN");
  }
  g_current.store(nullptr, std::memory_order_release);
  g_runtime = std::move(fresh);
  g_current.store(g_runtime.get(), std::memory_order_release);
  g_process_generation.store(next_generation());
}

std::unique_ptr<Runtime> build_sim_runtime(const SimOptions& sim) { return build("sim", sim); }

std::uint32_t next_generation() { return g_generation.fetch_add(1) + 1; }

void shutdown_runtime() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_pins > 0) return;  // native code still allocates: the process's exit takes it
  g_current.store(nullptr, std::memory_order_release);
  g_runtime.reset();
  g_process_generation.store(next_generation());
}

Runtime& pin_process_runtime() {
  std::lock_guard<std::mutex> lock(g_mu);
  Runtime& r = process_runtime_locked();
  ++g_pins;
  return r;
}

void unpin_process_runtime() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_pins > 0) --g_pins;
}

std::uint32_t runtime_generation() { return g_process_generation.load(); }

SimDevice& sim_device(Runtime& r, int device) {
  auto* sim = dynamic_cast<SimPlatform*>(&r.platform());
  if (sim == nullptr) {
    throw InvalidArgumentError("simulator controls need the sim backend; this process uses '" +
                                   r.platform().backend() + "' (set CCA_DEVICE=sim)",
                               "ERR_CCA_NOT_SIMULATED");
  }
  r.allocator(device);  // range check with the usual error
  return sim->sim_device(device);
}

}  // namespace cca
