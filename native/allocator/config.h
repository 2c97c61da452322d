// Allocator options: parsed once from a PYTORCH_CUDA_ALLOC_CONF-style string into an
// immutable struct that the allocator receives; the policy never reads a global.
//
// | key                             | default             | valid                          | meaning |
// |---------------------------------|---------------------|--------------------------------|---------|
// | max_split_size_mb               | unlimited (-1)      | >= large_segment_size_mb       | blocks this large are never split |
// | max_non_split_rounding_mb       | large segment (20)  | >= large_segment_size_mb       | how much bigger an oversize block may be than the request |
// | large_segment_size_mb           | 20                  | > 10                           | segment size for requests of 1..10 MiB |
// | garbage_collection_threshold    | 0 (off)             | (0, 1)                         | free old cached blocks above this share of the fraction limit |
// | roundup_power2_divisions        | 0 everywhere        | power of two or 0, or a list   | round sizes up to 1/N steps between powers of two |
// | per_process_memory_fraction     | 1.0                 | [0, 1]                         | cap reserved memory at this share of the device |
// | expandable_segments             | False               | True / False                   | one growable segment per stream and pool (VMM) |
// | backend                         | native              | native                         | cudaMallocAsync is not offered |
// | release_lock_on_cudamalloc, pinned_use_cuda_host_register, pinned_num_register_threads,
// | pinned_use_background_threads, pinned_reserve_segment_size_mb, pinned_free_catch_all,
// | graph_capture_record_stream_reuse, throw_on_cudamalloc_oom: accepted for compatibility, no effect.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "constants.h"

namespace cca {

struct AllocatorConfig {
  std::size_t max_split_size = kUnlimited;
  std::size_t max_non_split_rounding_size = kDefaultLargeSegment;
  std::size_t large_segment_size = kDefaultLargeSegment;
  double garbage_collection_threshold = 0.0;
  std::array<std::size_t, kRoundUpPowerOfTwoIntervals> roundup_power2_divisions{};
  double per_process_memory_fraction = 1.0;
  bool per_process_memory_fraction_set = false;
  bool expandable_segments = false;
  bool release_lock_on_cudamalloc = false;
  bool pinned_use_cuda_host_register = false;
  std::size_t pinned_num_register_threads = 1;
  bool graph_capture_record_stream_reuse = false;
  std::string source;  // the string it was parsed from, reported in allocator_settings

  // Parses a config string; throws InvalidArgumentError (code ERR_CCA_INVALID_CONFIG) for
  // unknown keys or bad values, with PyTorch's wording for unknown keys.
  static AllocatorConfig parse(const std::string& text);
  // Reads CCA_ALLOC_CONF, then PYTORCH_CUDA_ALLOC_CONF, then PYTORCH_ALLOC_CONF.
  static AllocatorConfig from_environment();
  // Names of the keys the parser knows, for hints.
  static const std::vector<std::string>& known_keys();
};

}  // namespace cca
