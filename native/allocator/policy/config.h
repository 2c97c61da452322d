// Allocator options: parsed once from a PYTORCH_CUDA_ALLOC_CONF-style string into an
// immutable struct that the allocator receives; the policy never reads a global. Each
// option's key, bounds, meaning and settings-dict name are one row of the table in
// options.h; this struct is where the rows store their values.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../../common/constants.h"

namespace cca {

struct AllocatorConfig {
  Bytes max_split_size = kUnlimited;
  Bytes max_non_split_rounding_size = kDefaultLargeSegment;
  Bytes large_segment_size = kDefaultLargeSegment;
  double garbage_collection_threshold = 0.0;
  std::array<Bytes, kRoundUpPowerOfTwoIntervals> roundup_power2_divisions{};
  double per_process_memory_fraction = 1.0;
  bool per_process_memory_fraction_set = false;
  bool expandable_segments = false;
  bool release_lock_on_cudamalloc = false;
  bool pinned_use_cuda_host_register = false;
  Bytes pinned_num_register_threads = 1;
  bool graph_capture_record_stream_reuse = false;
  // With a memory fraction set: a request the fraction refuses is rejected at once (an
  // out-of-memory error, counted in num_oom_rejections) instead of releasing the cache and
  // retrying.
  bool throw_on_cudamalloc_oom = false;
  std::string source;  // the string it was parsed from, reported in allocator_settings

  // Parses a config string; throws InvalidArgumentError (code ERR_CCA_INVALID_CONFIG) for
  // unknown keys or bad values, with PyTorch's wording for unknown keys.
  static AllocatorConfig parse(const std::string& text);
  // Reads CCA_ALLOC_CONF, then PYTORCH_CUDA_ALLOC_CONF, then PYTORCH_ALLOC_CONF.
  static AllocatorConfig from_environment();
  // The keys of the options table, in its order.
  static const std::vector<std::string>& known_keys();
};

// max_split_size as PyTorch reports it (the settings dict, the max_split_size stat): in
// bytes, and -1 when unlimited, as its int64 cast shows it.
inline std::int64_t reported_max_split(Bytes max_split_size) {
  return max_split_size == kUnlimited ? -1 : static_cast<std::int64_t>(max_split_size);
}

}  // namespace cca
