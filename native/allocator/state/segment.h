// A segment: one device allocation (or one reserved range of an expandable segment), and
// the list of blocks that tile it exactly, in address order. The list changes only through
// the operations here: splitting a block in two and a block absorbing its neighbour, so the
// tiling (each block starts where its predecessor ends, links agree both ways, the first
// block is `head`) holds after each of them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "block.h"
#include "../../common/debug.h"

namespace cca {

struct Segment {
  DevicePtr ptr = 0;
  Bytes size = 0;
  StreamId stream = 0;
  Link<BlockPool> pool;
  Link<Block> head;  // the block at the segment's lowest address
  bool counted_oversize = false;
  std::uint32_t stack = 0;  // interned stack of the malloc that made the segment
  // Expandable: a reserved address range mapped page by page; `size` is the whole range.
  bool expandable = false;
  Bytes page_size = 0;
  std::vector<std::uint64_t> pages;  // the device's handle of each mapped page, 0 if unmapped

  // Gives `front` the first `bytes` of `at` and links it just before `at`, which keeps the
  // rest. `front` is a fresh block: it takes at's stream, pool, segment and mapping.
  void split_front(Block* at, Block* front, Bytes bytes) {
    CCA_ASSERT(bytes > 0 && bytes < at->size && at->segment.get() == this);
    adopt(at, front);
    front->ptr = at->ptr;
    front->size = bytes;
    front->prev = at->prev;
    front->next = at;
    if (front->prev != nullptr) {
      front->prev->next = front;
    } else {
      head = front;
    }
    at->prev = front;
    at->ptr += bytes;
    at->size -= bytes;
  }

  // Gives `back` the bytes of `at` past its first `keep` and links it just after `at`.
  void split_back(Block* at, Block* back, Bytes keep) {
    CCA_ASSERT(keep > 0 && keep < at->size && at->segment.get() == this);
    adopt(at, back);
    back->ptr = at->ptr + keep;
    back->size = at->size - keep;
    back->prev = at;
    back->next = at->next;
    if (back->next != nullptr) back->next->prev = back;
    at->next = back;
    at->size = keep;
  }

  // `into` takes over the range of `neighbour` (its prev or next), which leaves the list;
  // the caller recycles it.
  void absorb(Block* into, Block* neighbour) {
    CCA_ASSERT(neighbour == into->prev.get() || neighbour == into->next.get());
    if (neighbour == into->prev.get()) {
      into->ptr = neighbour->ptr;
      into->prev = neighbour->prev;
      if (into->prev != nullptr) {
        into->prev->next = into;
      } else {
        head = into;
      }
    } else {
      into->next = neighbour->next;
      if (into->next != nullptr) into->next->prev = into;
    }
    into->size += neighbour->size;
  }

  // Whether `b` ends where its successor starts, the successor links back, and both are
  // this segment's: the tiling clause the validator checks for every block.
  bool contiguous_with_next(const Block& b) const {
    const Block* n = b.next;
    return n == nullptr ? b.ptr + b.size == ptr + size : (b.ptr + b.size == n->ptr && n->prev == &b);
  }

 private:
  static void adopt(Block* from, Block* b) {
    b->stream = from->stream;
    b->pool = from->pool;
    b->segment = from->segment;
    b->mapped = from->mapped;
    b->expandable = from->expandable;
  }
};

}  // namespace cca
