// PyTorch's allocation constants (c10::CachingAllocator), with the reason for each.
#pragma once
#include <cstddef>
#include <cstdint>

#include "types.h"

namespace cca {

// Every request is rounded up to a multiple of this, so blocks stay aligned for any dtype.
constexpr Bytes kMinBlockSize = 512;
// Requests up to and including this size go to the small pool (an exact 1 MiB is small).
constexpr Bytes kSmallSize = Bytes{1} << 20;
// Segment size for small requests: small blocks share 2 MiB segments.
constexpr Bytes kSmallBuffer = Bytes{2} << 20;
// Large requests below this get a whole large segment, so several of them can share it.
constexpr Bytes kMinLargeAlloc = Bytes{10} << 20;
// Requests of kMinLargeAlloc or more get a segment of their own, rounded to 2 MiB.
constexpr Bytes kRoundLarge = Bytes{2} << 20;
// Default large segment size (large_segment_size_mb), also the default of
// max_non_split_rounding_size.
constexpr Bytes kDefaultLargeSegment = Bytes{20} << 20;
// Buckets of roundup_power2_divisions: bucket k covers [2^k MiB, 2^(k+1) MiB), bucket 0
// also everything below 2 MiB, bucket 15 everything from 32 GiB.
constexpr int kRoundUpPowerOfTwoIntervals = 16;
// PyTorch refuses any single request this large before touching any state.
constexpr std::uint64_t kOneExaByte = std::uint64_t{1} << 60;
// max_split_size when unlimited; reported as -1, as PyTorch's int64 cast does.
constexpr Bytes kUnlimited = UINT64_MAX;

}  // namespace cca
