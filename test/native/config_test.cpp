#include <cstdlib>
#include <cstring>

#include "allocator/policy/config.h"
#include "common/errors.h"
#include "fixture.h"
#include "harness.h"

using namespace cca;
using namespace test;

TEST(config_defaults_and_keys) {
  AllocatorConfig c = AllocatorConfig::parse("");
  CHECK(c.max_split_size == kUnlimited);
  CHECK_EQ(c.large_segment_size, 20 * MiB);
  AllocatorConfig d = AllocatorConfig::parse(
      " max_split_size_mb : 64, garbage_collection_threshold:0.6,expandable_segments:False,"
      "max_non_split_rounding_mb:32,per_process_memory_fraction:0.5,pinned_num_register_threads:8");
  CHECK_EQ(d.max_split_size, 64 * MiB);
  CHECK_EQ(d.max_non_split_rounding_size, 32 * MiB);
  CHECK_EQ(d.garbage_collection_threshold, 0.6);
  CHECK(d.per_process_memory_fraction_set);
  CHECK_EQ(d.per_process_memory_fraction, 0.5);
  AllocatorConfig big = AllocatorConfig::parse("large_segment_size_mb:40,max_split_size_mb:40");
  CHECK_EQ(big.large_segment_size, 40 * MiB);
  CHECK_EQ(allocation_size(2 * MiB, big), 40 * MiB);
}

TEST(config_errors_name_the_problem) {
  try {
    AllocatorConfig::parse("max_split_size_mb:64,max_splitsize_mb:3");
    CHECK(false);
  } catch (const InvalidArgumentError& e) {
    CHECK_EQ(e.code(), std::string("ERR_CCA_INVALID_CONFIG"));
    CHECK(std::strstr(e.what(), "Unrecognized key 'max_splitsize_mb' in CUDA allocator config.") != nullptr);
    CHECK(std::strstr(e.what(), "max_split_size_mb") != nullptr);
  }
  CHECK_THROWS(AllocatorConfig::parse("expandable_segments:true"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("max_split_size_mb:10"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("max_split_size_mb:-5"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("garbage_collection_threshold:1.5"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("roundup_power2_divisions:3"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("roundup_power2_divisions:[64:3]"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("roundup_power2_divisions:[64:4"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("backend:cudaMallocAsync"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("max_split_size_mb"), InvalidArgumentError, "CONFIG");
  CHECK_THROWS(AllocatorConfig::parse("large_segment_size_mb:8"), InvalidArgumentError, "CONFIG");
  // PyTorch's words (CUDAAllocatorConfig::parsePerProcessMemoryFraction), as for every key.
  try {
    AllocatorConfig::parse("per_process_memory_fraction:1.5");
    CHECK(false);
  } catch (const InvalidArgumentError& e) {
    CHECK(std::strstr(e.what(), "per_process_memory_fraction is invalid, set it in [0.0, 1.0]") != nullptr);
  }
}

TEST(config_environment_precedence) {
  ::unsetenv("CCA_ALLOC_CONF");
  ::setenv("PYTORCH_ALLOC_CONF", "max_split_size_mb:100", 1);
  CHECK_EQ(AllocatorConfig::from_environment().max_split_size, 100 * MiB);
  ::setenv("PYTORCH_CUDA_ALLOC_CONF", "max_split_size_mb:200", 1);
  CHECK_EQ(AllocatorConfig::from_environment().max_split_size, 200 * MiB);
  ::setenv("CCA_ALLOC_CONF", "max_split_size_mb:300", 1);
  CHECK_EQ(AllocatorConfig::from_environment().max_split_size, 300 * MiB);
  ::unsetenv("CCA_ALLOC_CONF");
  ::unsetenv("PYTORCH_CUDA_ALLOC_CONF");
  ::unsetenv("PYTORCH_ALLOC_CONF");
  CHECK(AllocatorConfig::from_environment().max_split_size == kUnlimited);
}

TEST(stats_keys_match_pytorch) {
  const auto& keys = stat_keys();
  CHECK_EQ(keys.size(), std::size_t{123});
  for (std::size_t i = 1; i < keys.size(); ++i) CHECK(keys[i - 1] < keys[i]);
  auto has = [&](const char* k) { return std::find(keys.begin(), keys.end(), k) != keys.end(); };
  CHECK(has("allocation.all.current"));
  CHECK(has("allocated_bytes.small_pool.freed"));
  CHECK(has("requested_bytes.large_pool.peak"));
  CHECK(has("oversize_segments.allocated"));
  CHECK(has("num_alloc_retries"));
  CHECK(has("num_sync_all_streams"));
  CHECK(has("max_split_size"));
  CHECK(has("num_oom_rejections"));  // PyTorch 2026: the 123rd
  CHECK(!has("allocated.all.current"));  // the docstring's name; the real key is allocation.*
  std::vector<double> v(keys.size());
  stat_values(DeviceStats{}, -1, v.data());
  CHECK_EQ(v[std::find(keys.begin(), keys.end(), "max_split_size") - keys.begin()], -1.0);
}
