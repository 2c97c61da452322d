// The allocator's options, described once. Each row of allocator_options() says an
// option's key in a PYTORCH_CUDA_ALLOC_CONF-style string, the kind of value it takes, what
// the docs say of it, the name it has in PyTorch's allocator_settings dict, and how its
// value is checked and stored. The parser (config.cpp), its "did you mean" hint, the
// settings dict (the binding), replay's settings string and docs/configuration.md's table
// (test/contract/options-table.test.ts fails on drift) all read this table: a new option
// is one row.
#pragma once
#include <array>
#include <cstddef>
#include <string>
#include <vector>

#include "config.h"
#include "../../common/constants.h"

namespace cca {

enum class OptionKind {
  kMegabytes,  // a non-negative integer count of MiB
  kCount,      // a non-negative integer
  kNumber,     // a decimal number
  kBoolean,    // True or False (case-sensitive, as in PyTorch)
  kDivisions,  // a power of two, or a list [64:8,256:4,>:1] by size in MiB
  kWord,       // a bare word
};

// A value as the parser read it: the member of the option's kind is set.
struct OptionValue {
  Bytes integer = 0;
  double number = 0;
  bool boolean = false;
  std::string word;
  std::array<Bytes, kRoundUpPowerOfTwoIntervals> divisions{};
};

// A value as the settings dict shows it: a number, a boolean, or the divisions by bucket.
struct SettingValue {
  enum class Type { kNumber, kBoolean, kDivisions } type = Type::kNumber;
  double number = 0;
  bool boolean = false;
  std::array<Bytes, kRoundUpPowerOfTwoIntervals> divisions{};
};

// What apply() may read besides the value: options that bound others are applied first.
struct OptionContext {
  const char* key;             // the option's own key, for its messages
  Bytes min_segment_mb;  // large_segment_size_mb as given, else its default
};

using ApplyOption = void (*)(const OptionValue& value, const OptionContext& context, AllocatorConfig& config);
using ReportOption = SettingValue (*)(const AllocatorConfig& config);

// One row, its fields named where the table is written (options.cpp: Row's setters).
struct OptionSpec {
  const char* key = nullptr;
  OptionKind kind = OptionKind::kBoolean;
  // Applied before the other options, whose bounds it sets.
  bool first = false;
  // For the docs: the default, what is accepted, and what it does.
  const char* default_text = "";
  const char* valid_text = "";
  const char* meaning = "";
  // The option's name in the allocator_settings dict, or nullptr if the dict omits it.
  const char* setting = nullptr;
  // Checks the value (PyTorch's wording when it is refused) and stores it.
  ApplyOption apply = nullptr;
  // The stored value as the settings dict shows it (rows with a setting).
  ReportOption report = nullptr;
};

const std::vector<OptionSpec>& allocator_options();

// The kind's name as allocatorOptions() reports it (lib/allocator-options.ts reads it).
const char* option_kind_name(OptionKind kind);

// Throws InvalidArgumentError with code ERR_CCA_INVALID_CONFIG.
[[noreturn]] void bad_config(const std::string& message);

}  // namespace cca
