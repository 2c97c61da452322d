// Every rule of PyTorch's policy that decides a size, a pool or a choice of block, as a
// pure function of a request and the config, each named after the rule with PyTorch's
// reason in a line. Nothing here changes state: the allocator asks, the ledger acts.
#pragma once
#include <cstddef>

#include "../state/block_pool.h"
#include "config.h"

namespace cca {

// The next of d evenly spaced steps between the powers of two around size
// (1200 with d = 4 gives 1280). Powers of two are returned unchanged.
Bytes roundup_power2_next_division(Bytes size, Bytes divisions);
// The divisions configured for size's bucket: floor(log2(size)) - 20, clamped to [0, 15].
inline Bytes roundup_divisions_for(Bytes size, const AllocatorConfig& cfg) {
  int idx = size == 0 ? 0 : 63 - __builtin_clzll(static_cast<unsigned long long>(size)) - 20;
  if (idx < 0) idx = 0;
  if (idx > kRoundUpPowerOfTwoIntervals - 1) idx = kRoundUpPowerOfTwoIntervals - 1;
  return cfg.roundup_power2_divisions[static_cast<std::size_t>(idx)];
}
// Rounding. PyTorch's round_size: at least 512, then either the next 1/d step between
// powers of two (when d = roundup_power2_divisions(size) > 1 and size > 512 * d) or a
// multiple of 512. Why: fewer distinct sizes, so freed blocks fit later requests.
// (Inline, as should_split is: each cached alloc asks both.)
inline Bytes round_size(Bytes size, const AllocatorConfig& cfg) {
  if (size < kMinBlockSize) return kMinBlockSize;
  const Bytes divisions = roundup_divisions_for(size, cfg);
  if (divisions > 1 && size > kMinBlockSize * divisions) return roundup_power2_next_division(size, divisions);
  return (size + kMinBlockSize - 1) / kMinBlockSize * kMinBlockSize;
}

// Small vs large: rounded requests up to and including 1 MiB come from the small pool.
// Why: small tensors packed into 2 MiB segments do not fragment the large ones.
inline bool is_small_request(Bytes rounded) { return rounded <= kSmallSize; }

// Segment size when no cached block fits: 2 MiB for small requests, 20 MiB below 10 MiB,
// else the request rounded up to 2 MiB. Why: mid-size requests share a segment; huge
// ones get their own so they can be released whole.
Bytes allocation_size(Bytes rounded, const AllocatorConfig& cfg);

// Oversize: a block or request at or above max_split_size. Why: such blocks are never split
// (a small allocation must not pin a huge segment), and they alone are released to make
// room before the whole cache is (release_available_cached_blocks).
inline bool is_oversize(Bytes size, const AllocatorConfig& cfg) { return size >= cfg.max_split_size; }

// Whether a cached block of `block_size` may serve a rounded request at all. Why: a request
// below max_split_size never takes an oversize block (it would split it), and an oversize
// request takes one at most max_non_split_rounding_size bigger (the rest would be wasted).
inline bool oversize_rules_allow(Bytes rounded, Bytes block_size, const AllocatorConfig& cfg) {
  if (!is_oversize(rounded, cfg)) return !is_oversize(block_size, cfg);
  return block_size < rounded + cfg.max_non_split_rounding_size;
}

// Expandable blocks split like small ones. Why: their segment grows page by page, so a
// large remainder is still cheap to keep and the large-pool threshold would waste it.
inline bool splits_like_small(const Block& block) { return block.pool->is_small || block.expandable; }

// Note [Split thresholds]: whether handing out `rounded` bytes of a free block of
// `block_size` splits it. Small blocks split whenever the rest is at least 512 bytes;
// large blocks only when the request is below max_split_size and the rest exceeds 1 MiB
// (strictly). Why: large remainders stay useful and oversize blocks stay whole.
inline bool should_split(Bytes block_size, Bytes rounded, bool small_pool, const AllocatorConfig& cfg) {
  const Bytes remaining = block_size - rounded;
  if (small_pool) return remaining >= kMinBlockSize;
  return !is_oversize(rounded, cfg) && remaining > kSmallSize;
}

// Best fit: the cached block of `pool` a request takes, or nullptr. The smallest block on
// the stream that is large enough, lowest address on ties (why: the rest of the cache stays
// in big pieces), subject to the oversize rules. With expandable segments on, a block
// followed by unmapped space counts that space as part of its size, and a block that cannot
// grow is preferred (why: the unmapped space stays for large requests); with them off,
// expandable blocks are skipped.
// (Inline: this is the cached alloc's search; the expandable walk is out of line.)
const Block* best_expandable_fit(const BlockPool& pool, const Block* first, const AllocatorConfig& cfg);
inline const Block* best_cached_block(const BlockPool& pool, StreamId stream, Bytes rounded,
                                      const AllocatorConfig& cfg) {
  const Block* found = pool.first_at_least(stream, rounded);
  if (found != nullptr && found->expandable) found = best_expandable_fit(pool, found, cfg);
  return found != nullptr && oversize_rules_allow(rounded, found->size, cfg) ? found : nullptr;
}

}  // namespace cca
