// Replay's facet (replay_planner.h). The dry run asks each step of malloc's chain
// (caching_allocator.cpp) what it would decide, in its order, and stops where it would stop;
// nothing changes. The placement rebuilds a recorded segment: a history that began on a warm
// cache, or whose ring wrapped, starts with segments already holding live blocks at given
// offsets; the malloc path cannot reproduce that layout (it would pack the blocks from the
// front, and a gap under 1 MiB asked for through it goes to the small pool).
#include "replay_planner.h"

#include <algorithm>

#include "../facet_access.h"
#include "../../../common/message_format.h"

namespace cca {

namespace {

void check_layout(Bytes size, bool small, const std::vector<PlacedBlock>& live) {
  auto refuse = [](const std::string& why) {
    throw InvalidArgumentError("place_segment: " + why, "ERR_INVALID_ARG_VALUE");
  };
  if (size == 0 || size % kMinBlockSize != 0) refuse("the segment size must be a positive multiple of 512 bytes");
  if (small && size != kSmallBuffer) refuse("a small-pool segment is 2 MiB, got " + format_size(size));
  Bytes end = 0;
  for (const PlacedBlock& b : live) {
    if (b.size == 0 || b.size % kMinBlockSize != 0 || b.offset % kMinBlockSize != 0) {
      refuse("live blocks start and end on 512-byte boundaries and are not empty");
    }
    if (b.offset < end) refuse("live blocks must be sorted by offset and must not overlap");
    if (b.offset > size || b.size > size - b.offset) refuse("a live block ends past the segment");
    if (b.requested == 0 || b.requested > b.size) refuse("a live block's requested size is from 1 to its block size");
    end = b.offset + b.size;
  }
}

}  // namespace

MallocPlan ReplayPlanner::plan_malloc(std::uint64_t size, StreamId stream, std::uint32_t pool) const {
  MallocPlan plan;
  const auto lock = FacetAccess::lock(a_);
  FacetAccess::check_stream(a_, stream);
  plan.limited = FacetAccess::fraction_set(a_);
  if (size == 0 || size >= kOneExaByte) return plan;
  // get_free_block: a cached block ends the chain.
  if (const Block* b = FacetAccess::cached_block_for(a_, size, stream, pool)) {
    plan.cached = MallocPlan::Cached{b->ptr, b->size};
    return plan;
  }
  FacetAccess::MissOutcome miss = FacetAccess::miss_outcome(a_, size, stream, pool);
  plan.limit_releases = miss.limit_releases;
  plan.oversize_sizes = std::move(miss.oversize_sizes);
  plan.oversize_retries = miss.oversize_retries;
  return plan;
}

std::vector<DevicePtr> ReplayPlanner::place_segment(Bytes size, StreamId stream, std::uint32_t pool, bool small,
                                                    const std::vector<PlacedBlock>& live, std::uint32_t owner) {
  check_layout(size, small, live);
  auto lock = FacetAccess::lock(a_);
  FacetAccess::check_stream(a_, stream);
  const AllocatorConfig& config = FacetAccess::config(a_);
  if (config.expandable_segments) {
    throw InvalidArgumentError("place_segment: segments are not placed with expandable_segments on",
                               "ERR_INVALID_ARG_VALUE");
  }
  const BlockPool& bp = FacetAccess::pool(a_, pool, small);
  Device& device = FacetAccess::device(a_);
  DevicePtr ptr = 0;
  const Status s = device.malloc(&ptr, size);
  if (s == Status::kOutOfMemory) FacetAccess::throw_segment_oom(a_, size, stream, bp, lock);
  if (s != Status::kOk) throw device_error(device, "cudaMalloc of " + format_size(size), s);

  // From the front: a gap is handed out (and given back below) so the next live block starts
  // at its offset; each hand-out splits its front off `rest`, which keeps the remainder.
  Ledger& ledger = FacetAccess::ledger(a_);
  const Block* rest = ledger.segment_allocated(ptr, size, bp, stream, is_oversize(size, config), 0);
  bool rest_in_free_set = false;
  Bytes at = 0;
  std::vector<const Block*> gaps;
  std::vector<DevicePtr> out;
  out.reserve(live.size() + 1);
  out.push_back(ptr);
  auto take = [&](Bytes bytes, std::uint64_t requested) {
    HandOut h;
    h.requested = requested;
    h.size = bytes;
    h.split = at + bytes < size;
    h.oversize = is_oversize(bytes, config);
    h.owner = owner;
    const Block* given = ledger.hand_out(rest, rest_in_free_set, h);
    rest_in_free_set = true;
    at += bytes;
    return given;
  };
  for (const PlacedBlock& b : live) {
    if (b.offset > at) gaps.push_back(take(b.offset - at, b.offset - at));
    out.push_back(take(b.size, b.requested)->ptr);
  }
  if (live.empty()) gaps.push_back(take(size, size));  // an all-free segment: one gap
  for (const Block* gap : gaps) ledger.free_requested(gap, 0, CallContext{});
  FacetAccess::check_after_operation(a_);
  return out;
}

void ReplayPlanner::unplace_segment(DevicePtr base) {
  const auto lock = FacetAccess::lock(a_);
  const Block* only = nullptr;
  FacetAccess::ledger(a_).for_each_segment([&](const Segment& s) {
    if (s.ptr == base && !s.expandable && s.head->state == BlockState::kFree && !s.head->is_split()) only = s.head;
  });
  if (only == nullptr) {
    throw InvalidPointerError("unplace_segment: " + hex(base) + " does not start a segment that holds nothing");
  }
  FacetAccess::release_segment(a_, only);
  FacetAccess::check_after_operation(a_);
}

}  // namespace cca
