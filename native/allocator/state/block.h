// A block: one address range of a segment, free, handed out, or waiting to be free. Its
// segment keeps the blocks in address order (segment.h). Every pointer field is a Link, so
// a const Block leads only to const blocks, pools and segments: outside the ledger
// (ledger.h), which owns them all, nothing can change a block.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../../common/types.h"
#include "link.h"

namespace cca {

class BlockPool;
struct Segment;

enum class BlockState : std::uint8_t {
  kFree,         // in its pool's free set, reusable
  kAllocated,    // handed out to a caller
  kPendingFree,  // freed by the caller, waiting on events of streams that used it
};

struct Block {
  DevicePtr ptr = 0;
  Bytes size = 0;
  // The caller's unrounded size; kept after free (snapshots show it), 0 for a remainder
  // that was never handed out.
  Bytes requested_size = 0;
  StreamId stream = 0;  // the stream it was allocated on; it is only reused on this stream
  Link<BlockPool> pool;
  Link<Segment> segment;
  Link<Block> prev;
  Link<Block> next;
  BlockState state = BlockState::kFree;
  // False for expandable-segment address space not backed by memory (Note [Expandable
  // segments] in expandable_segments.cpp). Such a block is free and sits in its pool's
  // `unmapped` set; it merges only with unmapped neighbours.
  bool mapped = true;
  // Whether its segment is expandable: kept here too because the hot path (stats, best
  // fit) reads it for every block it touches, and the segment is another cache line.
  bool expandable = false;
  // Whether this allocation counts in oversize_allocations; fixed at hand-out so that a
  // later change of max_split_size cannot make the count drift.
  bool counted_oversize = false;
  int event_count = 0;                // events still to complete before it becomes free
  std::vector<StreamId> stream_uses;  // other streams recorded with record_stream
  std::uint64_t gc_stamp = 0;         // pool's get_free_blocks count when it became free
  std::uint32_t owner = 0;            // the JS environment or C client that allocated it (0: none)
  std::uint32_t alloc_stack = 0;      // interned stack of the malloc that handed it out (0: none)
  std::uint32_t tag = 0;              // interned user tag of that malloc (0: none)
  std::uint32_t bin_slot = 0;         // while free in a size bin: its index in the bin's heap

  bool is_split() const { return prev != nullptr || next != nullptr; }
};

}  // namespace cca
