// The size rules, as pure functions of a request and the config: rounding, pool choice,
// segment size and whether a found block is split. Nothing here touches state.
#pragma once
#include <cstddef>

#include "config.h"

namespace cca {

// PyTorch's round_size: at least 512, then either the next 1/d step between powers of two
// (when d = roundup_power2_divisions(size) > 1 and size > 512 * d) or a multiple of 512.
std::size_t round_size(std::size_t size, const AllocatorConfig& cfg);
// The next of d evenly spaced steps between the powers of two around size
// (1200 with d = 4 gives 1280). Powers of two are returned unchanged.
std::size_t roundup_power2_next_division(std::size_t size, std::size_t divisions);
// The divisions configured for size's bucket: floor(log2(size)) - 20, clamped to [0, 15].
std::size_t roundup_divisions_for(std::size_t size, const AllocatorConfig& cfg);

// Requests up to and including 1 MiB are small.
inline bool is_small_request(std::size_t rounded) { return rounded <= kSmallSize; }

// The size of the segment to ask the device for when no cached block fits.
std::size_t allocation_size(std::size_t rounded, const AllocatorConfig& cfg);

// Whether handing out `rounded` bytes of a free block of `block_size` splits it.
// Note [Split thresholds]: small blocks split whenever the rest is at least 512 bytes;
// large blocks only when the request is below max_split_size and the rest exceeds 1 MiB
// (strictly), so large remainders stay useful and oversize blocks stay whole.
bool should_split(std::size_t block_size, std::size_t rounded, bool small_pool,
                  const AllocatorConfig& cfg);

}  // namespace cca
