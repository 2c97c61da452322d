// A cached malloc+free pair through the C ABI's table (include/cca.h) against the same
// pair called on the core from C++, in one process on the process runtime (CCA_DEVICE
// picks the backend: the sim here, the real driver on the GPU runner). The two are timed
// in alternating runs (7 of each, 2M pairs per run, a warm cache of N live blocks beside),
// and the medians' ratio printed; issue 22's goal is <= 1.2.
#include <cstdio>
#include <vector>

#include "interop/c_api.h"
#include "runtime/process_runtime.h"
#include "timing.h"

using namespace cca;

int main() {
  const cca_api_v1* api = cca_api_from_address(reinterpret_cast<std::uintptr_t>(c_api_table()));
  cca_client* client = nullptr;
  if (api == nullptr || api->client_open("bench", CCA_CLIENT_ALLOW_SIMULATED, &client) != CCA_OK) {
    std::fprintf(stderr, "interop_bench: no client: %s\n", api ? api->last_error() : "bad table");
    return 1;
  }
  Runtime& runtime = process_runtime();
  DeviceCachingAllocator& a = runtime.allocator(0);
  std::printf("cached 4096-byte pair, C ABI table vs C++ core (%s; median of 7 alternating runs of 2M pairs)\n",
              runtime.selection_note().c_str());
  std::printf("%-14s %12s %12s %8s\n", "cached blocks", "C++ (ns)", "table (ns)", "ratio");
  for (std::size_t blocks : {std::size_t{16}, std::size_t{1000}, std::size_t{100000}}) {
    std::vector<DevicePtr> keep;
    for (std::size_t i = 0; i < 2 * blocks; ++i) keep.push_back(a.malloc(512 * (1 + i % 64), 0));
    for (std::size_t i = 0; i < keep.size(); i += 2) a.free(keep[i]);  // every other one cached
    const std::size_t n = 2000000;
    auto core = [&](std::size_t) { a.free(a.malloc(4096, 0)); };
    auto table = [&](std::size_t) {
      cca_ptr p = 0;
      api->malloc(client, 0, 4096, 0, &p);
      api->free(client, 0, p);
    };
    std::vector<double> c, t;
    for (int r = 0; r < 7; ++r) {
      c.push_back(bench::ns_per_op(n, core));
      t.push_back(bench::ns_per_op(n, table));
    }
    std::sort(c.begin(), c.end());
    std::sort(t.begin(), t.end());
    std::printf("%-14zu %12.1f %12.1f %8.2f\n", blocks, c[3], t[3], t[3] / c[3]);
    for (std::size_t i = 1; i < keep.size(); i += 2) a.free(keep[i]);
    a.empty_cache();
  }
  api->client_close(client);
  return 0;
}
