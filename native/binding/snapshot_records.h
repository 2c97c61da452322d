// The snapshot's fixed-width records, described once: each field's name and the value it
// takes, in order. The encoder below and the list of names the addon exports
// (snapshotLayout(), which lib/snapshot/layout.ts reads to find each field) both expand
// from these lists, so the C++ writer and the TypeScript reader cannot disagree on a
// position; test/snapshot-layout.test.ts fails when the reader and the lists name
// different fields.
#pragma once
#include <cstddef>
#include <cstdint>

#include "../common/clock.h"
#include "../allocator/state/snapshot.h"

namespace cca::binding {

// X(name, value of SnapshotSegment g)
#define CCA_SEGMENT_RECORD(X)        \
  X(address, g.address)              \
  X(total_size, g.total_size)        \
  X(allocated_size, g.allocated_size) \
  X(active_size, g.active_size)      \
  X(requested_size, g.requested_size) \
  X(stream, g.stream)                \
  X(is_small, g.is_small ? 1 : 0)    \
  X(is_expandable, g.is_expandable ? 1 : 0) \
  X(pool, g.pool)                    \
  X(stack, g.stack)                  \
  X(first_block, g.first_block)      \
  X(block_count, g.block_count)

// X(name, value of SnapshotBlock k)
#define CCA_BLOCK_RECORD(X)              \
  X(address, k.address)                  \
  X(size, k.size)                        \
  X(requested_size, k.requested_size)    \
  X(state, static_cast<int>(k.state))    \
  X(stack, k.stack)                      \
  X(tag, k.tag)

// X(name, value of TraceEntry e; conv: the tick converter). seq is exact below 2^53: ~285
// years at 1e6 events/s.
#define CCA_TRACE_RECORD(X)                                                  \
  X(action, static_cast<int>(e.action))                                      \
  X(addr, e.addr)                                                            \
  X(size, e.size)                                                            \
  X(stream, e.stream)                                                        \
  X(time_us, static_cast<std::int64_t>(conv.to_unix_us(e.ticks)))            \
  X(stack, e.stack)                                                          \
  X(tag, e.tag)                                                              \
  X(pool, e.pool)                                                            \
  X(seq, e.seq)

#define CCA_RECORD_COUNT(name, value) +1
#define CCA_RECORD_NAME(name, value) #name,
#define CCA_RECORD_WRITE(name, value) *out++ = static_cast<double>(value);

constexpr std::size_t kSegmentFields = 0 CCA_SEGMENT_RECORD(CCA_RECORD_COUNT);
constexpr std::size_t kBlockFields = 0 CCA_BLOCK_RECORD(CCA_RECORD_COUNT);
constexpr std::size_t kTraceFields = 0 CCA_TRACE_RECORD(CCA_RECORD_COUNT);

inline constexpr const char* kSegmentFieldNames[] = {CCA_SEGMENT_RECORD(CCA_RECORD_NAME)};
inline constexpr const char* kBlockFieldNames[] = {CCA_BLOCK_RECORD(CCA_RECORD_NAME)};
inline constexpr const char* kTraceFieldNames[] = {CCA_TRACE_RECORD(CCA_RECORD_NAME)};

// Each writes one record at `out` and returns the position after it.
inline double* write_record(const SnapshotSegment& g, double* out) {
  CCA_SEGMENT_RECORD(CCA_RECORD_WRITE)
  return out;
}
inline double* write_record(const SnapshotBlock& k, double* out) {
  CCA_BLOCK_RECORD(CCA_RECORD_WRITE)
  return out;
}
inline double* write_record(const TraceEntry& e, const TickConverter& conv, double* out) {
  CCA_TRACE_RECORD(CCA_RECORD_WRITE)
  return out;
}

}  // namespace cca::binding
