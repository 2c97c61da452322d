// A device's state as data: segments with their blocks and, on request, the history.
// Built under the allocator's lock by copying plain values; turning it into JS objects,
// pickle or JSON happens outside the lock.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "block.h"
#include "trace_ring.h"

namespace cca {

struct SnapshotBlock {
  DevicePtr address = 0;
  Bytes size = 0;
  Bytes requested_size = 0;
  BlockState state = BlockState::kFree;
  std::uint32_t stack = 0;
  std::uint32_t tag = 0;
};

struct SnapshotSegment {
  DevicePtr address = 0;
  Bytes total_size = 0;
  Bytes allocated_size = 0;  // sum over allocated blocks
  Bytes active_size = 0;     // allocated or waiting on events
  Bytes requested_size = 0;  // requested sizes of the active blocks
  StreamId stream = 0;
  bool is_small = false;
  bool is_expandable = false;
  std::uint32_t pool = 0;  // n of the pool id (0, n); 0: the default pool
  std::uint32_t stack = 0;
  std::size_t first_block = 0;  // index into DeviceSnapshot::blocks
  std::size_t block_count = 0;
};

// Where a snapshot puts the history ring's entries, read under the same lock as the segments:
// reserve(n) with the entry count, then each entry oldest first. The binding keeps them as
// Float64 records written straight into the buffer JS reads, so a million entries are not
// also held as a vector of TraceEntry meanwhile (64 MB at the peak of a dump).
class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void reserve(std::size_t n) = 0;
  virtual void add(const TraceEntry& e) = 0;
};

struct DeviceSnapshot {
  int device = 0;
  std::vector<SnapshotSegment> segments;  // by address
  std::vector<SnapshotBlock> blocks;
  bool traces_included = false;
  std::vector<TraceEntry> traces;  // oldest first; empty unless traces were asked for
  bool trace_overflowed = false;
  std::size_t trace_max_entries = 0;
};

}  // namespace cca
