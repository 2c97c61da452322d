// A simulated device with one allocator, for tests.
#pragma once
#include <memory>
#include <vector>

#include "allocator/policy/caching_allocator.h"
#include "allocator/policy/facets/sync_copies.h"
#include "allocator/policy/size_policy.h"
#include "device/sim/sim_device.h"

namespace test {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * 1024;
constexpr std::size_t GiB = 1024 * MiB;

// The allocator's segments as tests read them, from the snapshot (the one view the core
// offers); an expandable segment shows one entry per mapped range.
struct SegmentOf {
  cca::DevicePtr address;
  std::size_t total_size;
  bool is_small;
  std::vector<cca::SnapshotBlock> blocks;
};

inline std::vector<SegmentOf> segments(cca::DeviceCachingAllocator& a) {
  const cca::DeviceSnapshot snap = a.snapshot(0, false);
  std::vector<SegmentOf> out;
  for (const cca::SnapshotSegment& s : snap.segments) {
    out.push_back(SegmentOf{s.address, s.total_size, s.is_small,
                            std::vector<cca::SnapshotBlock>(snap.blocks.begin() + static_cast<long>(s.first_block),
                                                            snap.blocks.begin() + static_cast<long>(s.first_block + s.block_count))});
  }
  return out;
}

struct Fixture {
  explicit Fixture(std::size_t capacity = 16 * GiB, cca::AllocatorConfig cfg = {}, int devices = 1)
      : platform(cca::SimOptions{devices, capacity}) {
    for (int i = 0; i < devices; ++i) {
      allocators.push_back(std::make_unique<cca::DeviceCachingAllocator>(platform.device(i), cfg));
    }
  }
  cca::DeviceCachingAllocator& a(int device = 0) { return *allocators.at(device); }
  // Copies that wait, to and from device `device`'s memory.
  cca::SyncCopies copies(int device = 0) { return cca::SyncCopies(a(device), platform.copy_engine(device)); }
  cca::SimDevice& sim(int device = 0) { return platform.sim_device(device); }
  std::int64_t cur(cca::StatKind k, cca::StatPool p = cca::kAggregate, int device = 0) {
    return a(device).stats().arrays[k][p].current;
  }
  std::vector<double> all_stats(int device = 0) {
    std::vector<double> v(cca::stat_keys().size());
    cca::stat_values(a(device).stats(), -1, v.data());
    return v;
  }

  cca::SimPlatform platform;
  std::vector<std::unique_ptr<cca::DeviceCachingAllocator>> allocators;
};

}  // namespace test
