#include "options.h"

#include "../../common/errors.h"

namespace cca {

namespace {

constexpr Bytes kMB = Bytes{1} << 20;

bool is_power_of_two(Bytes v) { return v != 0 && (v & (v - 1)) == 0; }

Bytes megabytes_to_bytes(Bytes mb) { return mb >= kUnlimited / kMB ? kUnlimited : mb * kMB; }

// PyTorch's own check for the two sizes bounded by the large segment size.
void at_least_segment(Bytes mb, const OptionContext& c) {
  if (mb < c.min_segment_mb) {
    bad_config(std::string("CachingAllocator option ") + c.key + " too small, must be >= " + std::to_string(c.min_segment_mb));
  }
}

SettingValue number(double v) { return SettingValue{SettingValue::Type::kNumber, v, false, {}}; }
SettingValue boolean(bool v) { return SettingValue{SettingValue::Type::kBoolean, 0, v, {}}; }

// Accepted for compatibility with PyTorch's strings; checked, then not used.
void no_effect(const OptionValue&, const OptionContext&, AllocatorConfig&) {}

}  // namespace

const char* option_kind_name(OptionKind kind) {
  switch (kind) {
    case OptionKind::kMegabytes: return "megabytes";
    case OptionKind::kCount: return "count";
    case OptionKind::kNumber: return "number";
    case OptionKind::kBoolean: return "boolean";
    case OptionKind::kDivisions: return "divisions";
    case OptionKind::kWord: return "word";
  }
  return "unknown";
}

[[noreturn]] void bad_config(const std::string& message) {
  throw InvalidArgumentError(message, "ERR_CCA_INVALID_CONFIG");
}

const std::vector<OptionSpec>& allocator_options() {
  static const std::vector<OptionSpec> options = {
      {"max_split_size_mb", OptionKind::kMegabytes, false, "unlimited (-1)", ">= `large_segment_size_mb`",
       "blocks this large are never split; cached ones are released first on OOM", "max_split_size",
       [](const OptionValue& v, const OptionContext& c, AllocatorConfig& cfg) {
         at_least_segment(v.integer, c);
         cfg.max_split_size = megabytes_to_bytes(v.integer);
       },
       [](const AllocatorConfig& cfg) { return number(static_cast<double>(reported_max_split(cfg.max_split_size))); }},
      {"max_non_split_rounding_mb", OptionKind::kMegabytes, false, "`large_segment_size_mb` (20)", ">= `large_segment_size_mb`",
       "how much larger than a request an oversize block may be and still serve it", nullptr,
       [](const OptionValue& v, const OptionContext& c, AllocatorConfig& cfg) {
         at_least_segment(v.integer, c);
         cfg.max_non_split_rounding_size = megabytes_to_bytes(v.integer);
       },
       nullptr},
      {"large_segment_size_mb", OptionKind::kMegabytes, true, "20", "> 10",
       "segment size for requests of 1..10 MiB (and the default of `max_non_split_rounding_mb`)", nullptr,
       [](const OptionValue& v, const OptionContext& c, AllocatorConfig& cfg) {
         if (v.integer <= 10) bad_config(std::string(c.key) + " must be greater than 10, got " + std::to_string(v.integer));
         cfg.large_segment_size = v.integer * kMB;
         cfg.max_non_split_rounding_size = cfg.large_segment_size;
       },
       nullptr},
      {"garbage_collection_threshold", OptionKind::kNumber, false, "off", "(0, 1)",
       "with a memory fraction set: free old cached blocks above this share of the limit", "garbage_collection_threshold",
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) {
         if (!(v.number > 0.0 && v.number < 1.0)) bad_config("garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
         cfg.garbage_collection_threshold = v.number;
       },
       [](const AllocatorConfig& cfg) { return number(cfg.garbage_collection_threshold); }},
      {"roundup_power2_divisions", OptionKind::kDivisions, false, "0",
       "a power of two, or a list `[64:8,256:4,>:1]`", "round sizes up to 1/N steps between powers of two",
       "roundup_power2_divisions",
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.roundup_power2_divisions = v.divisions; },
       [](const AllocatorConfig& cfg) {
         return SettingValue{SettingValue::Type::kDivisions, 0, false, cfg.roundup_power2_divisions};
       }},
      {"per_process_memory_fraction", OptionKind::kNumber, false, "1.0", "[0, 1]", "cap on reserved memory", nullptr,
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) {
         if (!(v.number >= 0.0 && v.number <= 1.0)) bad_config("per_process_memory_fraction is invalid, set it in [0.0, 1.0]");
         cfg.per_process_memory_fraction = v.number;
         cfg.per_process_memory_fraction_set = true;
       },
       nullptr},
      {"expandable_segments", OptionKind::kBoolean, false, "False", "`True`/`False`",
       "one address range per (stream, pool), mapped page by page on demand (2 MiB small, 20 MiB large pages) and "
       "unmapped on release: less fragmentation for growing workloads. Needs the driver's VMM calls (or the sim); "
       "without them fixed segments are used",
       "expandable_segments",
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.expandable_segments = v.boolean; },
       [](const AllocatorConfig& cfg) { return boolean(cfg.expandable_segments); }},
      {"backend", OptionKind::kWord, false, "`native`", "`native`", "`cudaMallocAsync` is not offered", nullptr,
       [](const OptionValue& v, const OptionContext&, AllocatorConfig&) {
         if (v.word != "native") {
           bad_config("backend:" + v.word + " is not supported; only backend:native (the caching allocator) is");
         }
       },
       nullptr},
      {"release_lock_on_cudamalloc", OptionKind::kBoolean, false, "False", "`True`/`False`",
       "accepted for compatibility; no effect", "release_lock_on_cudamalloc",
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.release_lock_on_cudamalloc = v.boolean; },
       [](const AllocatorConfig& cfg) { return boolean(cfg.release_lock_on_cudamalloc); }},
      {"pinned_use_cuda_host_register", OptionKind::kBoolean, false, "False", "`True`/`False`",
       "accepted for compatibility; no effect", "pinned_use_cuda_host_register",
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.pinned_use_cuda_host_register = v.boolean; },
       [](const AllocatorConfig& cfg) { return boolean(cfg.pinned_use_cuda_host_register); }},
      {"pinned_num_register_threads", OptionKind::kCount, false, "1", "a power of two, at most 128",
       "accepted for compatibility; no effect", "pinned_num_register_threads",
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) {
         if (!is_power_of_two(v.integer) || v.integer > 128) {
           bad_config("Number of register threads has to be power of 2 and at most 128");
         }
         cfg.pinned_num_register_threads = v.integer;
       },
       [](const AllocatorConfig& cfg) { return number(static_cast<double>(cfg.pinned_num_register_threads)); }},
      {"pinned_use_background_threads", OptionKind::kBoolean, false, "False", "`True`/`False`",
       "accepted for compatibility; no effect", nullptr, no_effect, nullptr},
      {"pinned_reserve_segment_size_mb", OptionKind::kMegabytes, false, "0", "> 0", "accepted for compatibility; no effect",
       nullptr,
       [](const OptionValue& v, const OptionContext&, AllocatorConfig&) {
         if (v.integer == 0) bad_config("pinned_reserve_segment_size_mb must be > 0");
       },
       nullptr},
      {"pinned_free_catch_all", OptionKind::kBoolean, false, "False", "`True`/`False`",
       "accepted for compatibility; no effect", nullptr, no_effect, nullptr},
      {"graph_capture_record_stream_reuse", OptionKind::kBoolean, false, "False", "`True`/`False`",
       "accepted for compatibility; no effect", "graph_capture_record_stream_reuse",
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) {
         cfg.graph_capture_record_stream_reuse = v.boolean;
       },
       [](const AllocatorConfig& cfg) { return boolean(cfg.graph_capture_record_stream_reuse); }},
      {"throw_on_cudamalloc_oom", OptionKind::kBoolean, false, "False", "`True`/`False`",
       "with a memory fraction set, a request the fraction refuses is an out-of-memory error at once (no cache "
       "release and retry), counted in `num_oom_rejections`",
       nullptr,
       [](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.throw_on_cudamalloc_oom = v.boolean; },
       nullptr},
  };
  return options;
}

}  // namespace cca
