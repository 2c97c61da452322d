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

// A table row written with its fields named: option(key, kind).defaults(...).accepts(...)...
struct Row {
  OptionSpec spec;
  Row& applied_first() { spec.first = true; return *this; }
  Row& defaults(const char* text) { spec.default_text = text; return *this; }
  Row& accepts(const char* text) { spec.valid_text = text; return *this; }
  Row& means(const char* text) { spec.meaning = text; return *this; }
  Row& applies(ApplyOption f) { spec.apply = f; return *this; }
  // Shown in the allocator_settings dict as `name`, by `f`.
  Row& in_settings(const char* name, ReportOption f) {
    spec.setting = name;
    spec.report = f;
    return *this;
  }
  operator OptionSpec() const { return spec; }  // NOLINT: the table is a list of rows
};

Row option(const char* key, OptionKind kind) {
  Row r;
  r.spec.key = key;
  r.spec.kind = kind;
  return r;
}

constexpr const char* kNoEffect = "accepted for compatibility; no effect";
constexpr const char* kTrueFalse = "`True`/`False`";

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
      option("max_split_size_mb", OptionKind::kMegabytes)
          .defaults("unlimited (-1)")
          .accepts(">= `large_segment_size_mb`")
          .means("blocks this large are never split; cached ones are released first on OOM")
          .applies([](const OptionValue& v, const OptionContext& c, AllocatorConfig& cfg) {
            at_least_segment(v.integer, c);
            cfg.max_split_size = megabytes_to_bytes(v.integer);
          })
          .in_settings("max_split_size", [](const AllocatorConfig& cfg) {
            return number(static_cast<double>(reported_max_split(cfg.max_split_size)));
          }),
      option("max_non_split_rounding_mb", OptionKind::kMegabytes)
          .defaults("`large_segment_size_mb` (20)")
          .accepts(">= `large_segment_size_mb`")
          .means("how much larger than a request an oversize block may be and still serve it")
          .applies([](const OptionValue& v, const OptionContext& c, AllocatorConfig& cfg) {
            at_least_segment(v.integer, c);
            cfg.max_non_split_rounding_size = megabytes_to_bytes(v.integer);
          }),
      option("large_segment_size_mb", OptionKind::kMegabytes)
          .applied_first()
          .defaults("20")
          .accepts("> 10")
          .means("segment size for requests of 1..10 MiB (and the default of `max_non_split_rounding_mb`)")
          .applies([](const OptionValue& v, const OptionContext& c, AllocatorConfig& cfg) {
            if (v.integer <= 10) bad_config(std::string(c.key) + " must be greater than 10, got " + std::to_string(v.integer));
            cfg.large_segment_size = v.integer * kMB;
            cfg.max_non_split_rounding_size = cfg.large_segment_size;
          }),
      option("garbage_collection_threshold", OptionKind::kNumber)
          .defaults("off")
          .accepts("(0, 1)")
          .means("with a memory fraction set: free old cached blocks above this share of the limit")
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) {
            if (!(v.number > 0.0 && v.number < 1.0)) bad_config("garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
            cfg.garbage_collection_threshold = v.number;
          })
          .in_settings("garbage_collection_threshold", [](const AllocatorConfig& cfg) { return number(cfg.garbage_collection_threshold); }),
      option("roundup_power2_divisions", OptionKind::kDivisions)
          .defaults("0")
          .accepts("a power of two, or a list `[64:8,256:4,>:1]`")
          .means("round sizes up to 1/N steps between powers of two")
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.roundup_power2_divisions = v.divisions; })
          .in_settings("roundup_power2_divisions", [](const AllocatorConfig& cfg) {
            return SettingValue{SettingValue::Type::kDivisions, 0, false, cfg.roundup_power2_divisions};
          }),
      // PyTorch's dict has no entry for it; ours does, so that a recording says whether the
      // fraction capped it (-1: not set, which differs from a fraction of 1.0 set: then the
      // cap refuses before the device does).
      option("per_process_memory_fraction", OptionKind::kNumber)
          .defaults("1.0")
          .accepts("[0, 1]")
          .means("cap on reserved memory")
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) {
            if (!(v.number >= 0.0 && v.number <= 1.0)) bad_config("per_process_memory_fraction is invalid, set it in [0.0, 1.0]");
            cfg.per_process_memory_fraction = v.number;
            cfg.per_process_memory_fraction_set = true;
          })
          .in_settings("per_process_memory_fraction", [](const AllocatorConfig& cfg) {
            return number(cfg.per_process_memory_fraction_set ? cfg.per_process_memory_fraction : -1.0);
          }),
      option("expandable_segments", OptionKind::kBoolean)
          .defaults("False")
          .accepts(kTrueFalse)
          .means("one address range per (stream, pool), mapped page by page on demand (2 MiB small, 20 MiB large pages) "
                 "and unmapped on release: less fragmentation for growing workloads. Needs the driver's VMM calls (or the "
                 "sim); without them fixed segments are used")
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.expandable_segments = v.boolean; })
          .in_settings("expandable_segments", [](const AllocatorConfig& cfg) { return boolean(cfg.expandable_segments); }),
      option("backend", OptionKind::kWord)
          .defaults("`native`")
          .accepts("`native`")
          .means("`cudaMallocAsync` is not offered")
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig&) {
            if (v.word != "native") {
              bad_config("backend:" + v.word + " is not supported; only backend:native (the caching allocator) is");
            }
          }),
      option("release_lock_on_cudamalloc", OptionKind::kBoolean)
          .defaults("False")
          .accepts(kTrueFalse)
          .means(kNoEffect)
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.release_lock_on_cudamalloc = v.boolean; })
          .in_settings("release_lock_on_cudamalloc", [](const AllocatorConfig& cfg) { return boolean(cfg.release_lock_on_cudamalloc); }),
      option("pinned_use_cuda_host_register", OptionKind::kBoolean)
          .defaults("False")
          .accepts(kTrueFalse)
          .means(kNoEffect)
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.pinned_use_cuda_host_register = v.boolean; })
          .in_settings("pinned_use_cuda_host_register",
                       [](const AllocatorConfig& cfg) { return boolean(cfg.pinned_use_cuda_host_register); }),
      option("pinned_num_register_threads", OptionKind::kCount)
          .defaults("1")
          .accepts("a power of two, at most 128")
          .means(kNoEffect)
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) {
            if (!is_power_of_two(v.integer) || v.integer > 128) {
              bad_config("Number of register threads has to be power of 2 and at most 128");
            }
            cfg.pinned_num_register_threads = v.integer;
          })
          .in_settings("pinned_num_register_threads", [](const AllocatorConfig& cfg) {
            return number(static_cast<double>(cfg.pinned_num_register_threads));
          }),
      option("pinned_use_background_threads", OptionKind::kBoolean)
          .defaults("False")
          .accepts(kTrueFalse)
          .means(kNoEffect)
          .applies(no_effect),
      option("pinned_reserve_segment_size_mb", OptionKind::kMegabytes)
          .defaults("0")
          .accepts("> 0")
          .means(kNoEffect)
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig&) {
            if (v.integer == 0) bad_config("pinned_reserve_segment_size_mb must be > 0");
          }),
      option("pinned_free_catch_all", OptionKind::kBoolean)
          .defaults("False")
          .accepts(kTrueFalse)
          .means(kNoEffect)
          .applies(no_effect),
      option("graph_capture_record_stream_reuse", OptionKind::kBoolean)
          .defaults("False")
          .accepts(kTrueFalse)
          .means(kNoEffect)
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) {
            cfg.graph_capture_record_stream_reuse = v.boolean;
          })
          .in_settings("graph_capture_record_stream_reuse",
                       [](const AllocatorConfig& cfg) { return boolean(cfg.graph_capture_record_stream_reuse); }),
      option("throw_on_cudamalloc_oom", OptionKind::kBoolean)
          .defaults("False")
          .accepts(kTrueFalse)
          .means("with a memory fraction set, a request the fraction refuses is an out-of-memory error at once (no cache "
                 "release and retry), counted in `num_oom_rejections`")
          .applies([](const OptionValue& v, const OptionContext&, AllocatorConfig& cfg) { cfg.throw_on_cudamalloc_oom = v.boolean; }),
  };
  return options;
}

}  // namespace cca
