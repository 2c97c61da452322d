// The C ABI (include/cca.h) over the process runtime, on simulated devices: clients that
// must say they accept simulated memory, allocations attributed to them and freed only by
// them, counters that agree with the allocator, adopted streams, and a status with a
// message for each bad call, from several threads at once, the validator after.
#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "harness.h"
#include "interop/c_api.h"
#include "interop/clients.h"
#include "runtime/process_runtime.h"

using namespace cca;

namespace {

const cca_api_v1& api() {
  const cca_api_v1* t = cca_api_from_address(reinterpret_cast<std::uintptr_t>(c_api_table()));
  if (t == nullptr) harness::fail(__FILE__, __LINE__, "the table's magic or major is wrong");
  return *t;
}

std::string last_error() { return api().last_error(); }

void use_sim(int devices) { replace_runtime("sim", SimOptions{devices, std::size_t{1} << 30}); }

}  // namespace

TEST(interop_table_is_versioned_and_refuses_bad_addresses) {
  const cca_api_v1& t = api();
  CHECK_EQ(t.major, 1u);
  CHECK_EQ(t.size, std::uint64_t{sizeof(cca_api_v1)});
  CHECK(cca_api_from_address(0) == nullptr);
  cca_api_v1 fake{};
  fake.magic = CCA_API_MAGIC;
  fake.major = 2;
  CHECK(cca_api_from_address(reinterpret_cast<std::uintptr_t>(&fake)) == nullptr);
  fake.major = 1;
  fake.magic = 42;
  CHECK(cca_api_from_address(reinterpret_cast<std::uintptr_t>(&fake)) == nullptr);
  CHECK(std::strcmp(cca_status_name(CCA_ERR_INVALID_STREAM), "CCA_ERR_INVALID_STREAM") == 0);
}

TEST(interop_client_on_simulated_devices_must_accept_them) {
  use_sim(1);
  const cca_api_v1& t = api();
  cca_client* c = reinterpret_cast<cca_client*>(1);
  CHECK_EQ(t.client_open("codec", 0, &c), CCA_ERR_SIMULATED);
  CHECK(c == nullptr);
  CHECK(last_error().find("CCA_CLIENT_ALLOW_SIMULATED") != std::string::npos);
  CHECK_EQ(t.client_open("", CCA_CLIENT_ALLOW_SIMULATED, &c), CCA_ERR_INVALID_ARGUMENT);
  CHECK_EQ(t.client_open(nullptr, CCA_CLIENT_ALLOW_SIMULATED, &c), CCA_ERR_INVALID_ARGUMENT);
  CHECK_EQ(t.client_open(std::string(65, 'x').c_str(), CCA_CLIENT_ALLOW_SIMULATED, &c), CCA_ERR_INVALID_ARGUMENT);
  CHECK_EQ(t.client_open("bad\nname", CCA_CLIENT_ALLOW_SIMULATED, &c), CCA_ERR_INVALID_ARGUMENT);
  CHECK_EQ(t.client_open("codec", 8, &c), CCA_ERR_INVALID_ARGUMENT);
  CHECK_EQ(t.client_open("codec", CCA_CLIENT_ALLOW_SIMULATED, nullptr), CCA_ERR_INVALID_ARGUMENT);
  // None of the refusals left the runtime pinned: it can be replaced.
  use_sim(1);
}

TEST(interop_allocations_are_the_clients_and_tagged) {
  use_sim(2);
  const cca_api_v1& t = api();
  cca_client* codec = nullptr;
  cca_client* engine = nullptr;
  CHECK_EQ(t.client_open("codec", CCA_CLIENT_ALLOW_SIMULATED, &codec), CCA_OK);
  CHECK_EQ(t.client_open("engine", CCA_CLIENT_ALLOW_SIMULATED, &engine), CCA_OK);
  // While a client is open the devices cannot be replaced under it.
  CHECK_THROWS(replace_runtime("sim", SimOptions{1, std::size_t{1} << 30}), InvalidArgumentError,
               "ERR_CCA_CLIENTS_OPEN");
  DeviceCachingAllocator& a = process_runtime().allocator(1);
  cca_ptr p = 0, q = 0;
  CHECK_EQ(t.malloc(codec, 1, 1000, 0, &p), CCA_OK);
  CHECK_EQ(t.malloc(engine, 1, 3 << 20, 0, &q), CCA_OK);
  cca_ptr zero = 7;
  CHECK_EQ(t.malloc(codec, 1, 0, 0, &zero), CCA_OK);
  CHECK_EQ(zero, cca_ptr{0});
  // Snapshots carry the client's tag; the tag names the client.
  DeviceSnapshot snap = a.snapshot(0, true);
  int tagged = 0;
  for (const auto& b : snap.blocks) {
    if (b.address == p) tagged += client_tag_name(b.tag) == "codec";
    if (b.address == q) tagged += client_tag_name(b.tag) == "engine";
  }
  CHECK_EQ(tagged, 2);
  // Only the client that allocated may free; a pointer inside, a foreign one, a double free.
  CHECK_EQ(t.free(engine, 1, p), CCA_ERR_INVALID_POINTER);
  CHECK(last_error().find("another client") != std::string::npos);
  CHECK_EQ(t.free(codec, 1, p + 16), CCA_ERR_INVALID_POINTER);
  CHECK(last_error().find("points inside") != std::string::npos);
  CHECK_EQ(t.free(codec, 0, p), CCA_ERR_INVALID_POINTER);
  CHECK_EQ(t.free(codec, 7, p), CCA_ERR_INVALID_DEVICE);
  CHECK_EQ(t.free(codec, -1, p), CCA_ERR_INVALID_DEVICE);
  cca_ptr base = 0;
  std::size_t size = 0;
  cca_stream stream = 9;
  CHECK_EQ(t.get_allocation(1, q + 100, &base, &size, &stream), CCA_OK);
  CHECK_EQ(base, q);
  CHECK_EQ(size, std::size_t{3} << 20);
  CHECK_EQ(stream, cca_stream{0});
  CHECK_EQ(t.get_allocation(1, q + (3 << 20), &base, nullptr, nullptr), CCA_ERR_INVALID_POINTER);
  CHECK_EQ(t.free(codec, 1, p), CCA_OK);
  CHECK_EQ(t.free(codec, 1, p), CCA_ERR_INVALID_POINTER);
  CHECK_EQ(t.free(codec, 1, 0), CCA_OK);
  // A size past any device: PyTorch's message with the numbers, nothing changed.
  cca_ptr huge = 0;
  CHECK_EQ(t.malloc(codec, 1, std::size_t{1} << 40, 0, &huge), CCA_ERR_OUT_OF_MEMORY);
  CHECK(last_error().find("CUDA out of memory. Tried to allocate 1024.00 GiB") != std::string::npos);
  CHECK_EQ(t.malloc(codec, 1, 100, 0x1234, &huge), CCA_ERR_INVALID_STREAM);
  CHECK(last_error().find("adopted") != std::string::npos);
  CHECK_EQ(t.malloc(codec, 1, 100, 0, nullptr), CCA_ERR_INVALID_ARGUMENT);
  // Counters per client and device; each name is listed, on the device it used only.
  int listed = 0;
  for (const ClientInfo& c : client_infos()) {
    if (c.name == "engine") {
      ++listed;
      CHECK_EQ(c.device, 1);
      CHECK_EQ(c.bytes, std::int64_t{3} << 20);
      CHECK_EQ(c.allocations, std::int64_t{1});
    }
    if (c.name == "codec") {
      ++listed;
      CHECK_EQ(c.device, 1);
      CHECK_EQ(c.bytes, std::int64_t{0});
      CHECK_EQ(c.bytes_peak, std::int64_t{1000});
      CHECK_EQ(c.num_allocs, std::uint64_t{1});
      CHECK_EQ(c.num_frees, std::uint64_t{1});
    }
  }
  CHECK_EQ(listed, 2);
  std::size_t free_bytes = 0, total = 0;
  CHECK_EQ(t.mem_get_info(1, &free_bytes, &total), CCA_OK);
  CHECK_EQ(total, std::size_t{1} << 30);
  CHECK_EQ(t.mem_get_info(1, nullptr, &total), CCA_ERR_INVALID_ARGUMENT);
  CHECK_EQ(t.empty_cache(1), CCA_OK);
  CHECK_EQ(t.empty_cache(2), CCA_ERR_INVALID_DEVICE);
  CHECK_EQ(t.free(engine, 1, q), CCA_OK);
  t.client_close(codec);
  cca_ptr after = 0;
  CHECK_EQ(t.malloc(codec, 1, 100, 0, &after), CCA_ERR_CLIENT);
  CHECK_EQ(t.malloc(nullptr, 1, 100, 0, &after), CCA_ERR_CLIENT);
  t.client_close(codec);  // twice: nothing
  t.client_close(engine);
  CHECK_EQ(a.validate(), std::string());
  use_sim(1);  // every client closed: the devices can be replaced again
}

TEST(interop_adopted_streams_order_reuse_and_release_without_destroying) {
  use_sim(1);
  const cca_api_v1& t = api();
  cca_client* c = nullptr;
  CHECK_EQ(t.client_open("streams", CCA_CLIENT_ALLOW_SIMULATED, &c), CCA_OK);
  SimDevice& sim = sim_device(process_runtime(), 0);
  StreamId own = 0;  // the consumer's own stream, made without the allocator
  CHECK(sim.stream_create(&own) == Status::kOk);
  cca_ptr p = 0;
  CHECK_EQ(t.malloc(c, 0, 4096, own, &p), CCA_ERR_INVALID_STREAM);
  CHECK_EQ(t.stream_adopt(0, own), CCA_OK);
  CHECK_EQ(t.stream_adopt(0, own), CCA_OK);  // counted
  CHECK_EQ(t.stream_adopt(0, 0), CCA_ERR_INVALID_STREAM);
  CHECK_EQ(t.stream_adopt(0, 0xdead0), CCA_ERR_INVALID_STREAM);
  CHECK(last_error().find("not a stream of device 0") != std::string::npos);
  CHECK_EQ(t.malloc(c, 0, 4096, own, &p), CCA_OK);
  // Used on the default stream too: its block waits for that stream's work when freed.
  sim.hold_stream(0, true);
  CHECK_EQ(t.record_stream(0, p, 0), CCA_OK);
  CHECK_EQ(t.record_stream(0, p + 4096 * 1024, 0), CCA_ERR_INVALID_POINTER);
  CHECK_EQ(t.record_stream(0, p, 0x77), CCA_ERR_INVALID_STREAM);
  CHECK_EQ(t.free(c, 0, p), CCA_OK);
  cca_ptr again = 0;
  CHECK_EQ(t.malloc(c, 0, 4096, own, &again), CCA_OK);
  CHECK(again != p);  // p still waits on the held default stream
  sim.complete_stream(0);
  sim.hold_stream(0, false);
  CHECK_EQ(t.free(c, 0, again), CCA_OK);
  CHECK_EQ(t.stream_release(0, own), CCA_OK);
  CHECK_EQ(t.malloc(c, 0, 4096, own, &p), CCA_OK);  // still adopted once
  CHECK_EQ(t.free(c, 0, p), CCA_OK);
  CHECK_EQ(t.stream_release(0, own), CCA_OK);
  CHECK_EQ(t.malloc(c, 0, 4096, own, &p), CCA_ERR_INVALID_STREAM);
  CHECK_EQ(t.stream_release(0, own), CCA_ERR_INVALID_STREAM);
  // Released, not destroyed: the consumer's stream still works and is its to destroy.
  CHECK(sim.stream_query(own) == Status::kOk);
  CHECK(sim.stream_destroy(own) == Status::kOk);
  CHECK_EQ(process_runtime().allocator(0).validate(), std::string());
  t.client_close(c);
}

TEST(interop_concurrent_clients_allocate_from_threads_at_once) {
  use_sim(1);
  const cca_api_v1& t = api();
  constexpr int kThreads = 6;
  constexpr int kRounds = 400;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i) {
    threads.emplace_back([&, i] {
      cca_client* c = nullptr;
      const std::string name = "worker-" + std::to_string(i % 3);
      if (t.client_open(name.c_str(), CCA_CLIENT_ALLOW_SIMULATED, &c) != CCA_OK) {
        failures.fetch_add(1);
        return;
      }
      std::vector<cca_ptr> live;
      for (int r = 0; r < kRounds; ++r) {
        cca_ptr p = 0;
        const std::size_t size = 512u * static_cast<std::size_t>(1 + (r * 7 + i) % 50) + (r % 3 == 0 ? (2u << 20) : 0u);
        if (t.malloc(c, 0, size, 0, &p) != CCA_OK) failures.fetch_add(1);
        live.push_back(p);
        if (r % 2 == 1) {
          if (t.free(c, 0, live.front()) != CCA_OK) failures.fetch_add(1);
          live.erase(live.begin());
        }
      }
      for (cca_ptr p : live) {
        if (t.free(c, 0, p) != CCA_OK) failures.fetch_add(1);
      }
      t.client_close(c);
    });
  }
  for (auto& th : threads) th.join();
  CHECK_EQ(failures.load(), 0);
  DeviceCachingAllocator& a = process_runtime().allocator(0);
  CHECK_EQ(a.validate(), std::string());
  CHECK_EQ(a.stats().arrays[kAllocatedBytes][kAggregate].current, std::int64_t{0});
}

TEST(interop_client_figures_never_bring_up_the_devices) {
  // memory_stats() asks for the clients' figures even in an environment with simulated
  // devices of its own: that must not build the process's runtime (its GPUs).
  shutdown_runtime();
  CHECK(current_process_runtime() == nullptr);
  client_infos();
  CHECK(current_process_runtime() == nullptr);
  use_sim(1);
  CHECK(current_process_runtime() != nullptr);
}
