#include "config.h"

#include <cctype>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "errors.h"

namespace cca {

namespace {

constexpr std::size_t kMB = std::size_t{1} << 20;

[[noreturn]] void bad_config(const std::string& message) {
  throw InvalidArgumentError(message, "ERR_CCA_INVALID_CONFIG");
}

bool is_power_of_two(std::size_t v) { return v != 0 && (v & (v - 1)) == 0; }

// Splits "a:1,b:[x:2,>:3]" into tokens, treating , : [ ] as tokens of their own and
// dropping whitespace, as PyTorch's ConfigTokenizer does.
std::vector<std::string> tokenize(const std::string& text) {
  std::vector<std::string> out;
  std::string word;
  for (char c : text) {
    if (c == ',' || c == ':' || c == '[' || c == ']') {
      if (!word.empty()) out.push_back(std::move(word));
      word.clear();
      out.emplace_back(1, c);
    } else if (!std::isspace(static_cast<unsigned char>(c))) {
      word.push_back(c);
    }
  }
  if (!word.empty()) out.push_back(std::move(word));
  return out;
}

class Tokens {
 public:
  explicit Tokens(std::vector<std::string> t) : t_(std::move(t)) {}
  std::size_t size() const { return t_.size(); }
  const std::string& at(std::size_t i) const {
    if (i >= t_.size()) bad_config("Unexpected end of CUDA allocator config string");
    return t_[i];
  }
  void expect(std::size_t i, const char* token) const {
    if (at(i) != token) {
      bad_config(std::string("Expected '") + token + "' in CUDA allocator config but found '" +
                 at(i) + "'");
    }
  }
  std::size_t to_size(std::size_t i, const std::string& key) const {
    const std::string& s = at(i);
    if (s.empty() || s.size() > 19 ||
        s.find_first_not_of("0123456789") != std::string::npos) {
      bad_config("Expected a non-negative integer for " + key + " but got '" + s + "'");
    }
    return static_cast<std::size_t>(std::strtoull(s.c_str(), nullptr, 10));
  }
  double to_double(std::size_t i, const std::string& key) const {
    const std::string& s = at(i);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) {
      bad_config("Expected a number for " + key + " but got '" + s + "'");
    }
    return v;
  }
  bool to_bool(std::size_t i, const std::string& key) const {
    const std::string& s = at(i);
    if (s == "True") return true;
    if (s == "False") return false;
    bad_config("Expected value True or False for " + key + " but got '" + s +
               "' (booleans are case-sensitive)");
  }

 private:
  std::vector<std::string> t_;
};

std::size_t parse_divisions(const Tokens& tk, std::size_t i, AllocatorConfig& cfg) {
  const std::string key = "roundup_power2_divisions";
  auto& div = cfg.roundup_power2_divisions;
  if (tk.at(i) != "[") {
    std::size_t value = tk.to_size(i, key);
    if (!is_power_of_two(value)) bad_config("For roundups, the divisions has to be power of 2");
    div.fill(value);
    return i;
  }
  bool first = true;
  std::size_t last_index = 0;
  while (++i < tk.size() && tk.at(i) != "]") {
    std::size_t key_index = i;
    tk.expect(++i, ":");
    std::size_t value = tk.to_size(++i, key);
    if (value != 0 && !is_power_of_two(value)) {
      bad_config("For roundups, the divisions has to be power of 2 or 0 to disable roundup");
    }
    if (tk.at(key_index) == ">") {
      for (std::size_t k = last_index + 1; k < div.size(); ++k) div[k] = value;
    } else {
      std::size_t boundary_mb = tk.to_size(key_index, key);
      if (!is_power_of_two(boundary_mb)) bad_config("For roundups, the intervals have to be power of 2");
      std::size_t index = 0;
      while ((std::size_t{1} << (index + 1)) <= boundary_mb) ++index;
      if (index >= div.size()) index = div.size() - 1;
      if (first) {
        for (std::size_t k = 0; k < index; ++k) div[k] = value;
        first = false;
      }
      div[index] = value;
      last_index = index;
    }
    if (tk.at(i + 1) != "]") tk.expect(++i, ",");
  }
  if (i >= tk.size()) bad_config("Expected closing bracket ']' in CUDA allocator config");
  return i;
}

std::string closest_key(const std::string& key) {
  // A hint for misspellings: the known key sharing the longest prefix.
  std::string best;
  std::size_t best_len = 2;
  for (const auto& k : AllocatorConfig::known_keys()) {
    std::size_t n = 0;
    while (n < k.size() && n < key.size() && k[n] == key[n]) ++n;
    if (n > best_len) {
      best_len = n;
      best = k;
    }
  }
  return best;
}

}  // namespace

const std::vector<std::string>& AllocatorConfig::known_keys() {
  static const std::vector<std::string> keys = {
      "backend", "large_segment_size_mb", "max_split_size_mb", "max_non_split_rounding_mb",
      "garbage_collection_threshold", "roundup_power2_divisions", "expandable_segments",
      "per_process_memory_fraction", "release_lock_on_cudamalloc",
      "pinned_use_cuda_host_register", "pinned_num_register_threads",
      "pinned_use_background_threads", "pinned_reserve_segment_size_mb",
      "pinned_free_catch_all", "graph_capture_record_stream_reuse", "throw_on_cudamalloc_oom",
  };
  return keys;
}

AllocatorConfig AllocatorConfig::parse(const std::string& text) {
  AllocatorConfig cfg;
  cfg.source = text;
  Tokens tk(tokenize(text));
  // large_segment_size_mb bounds the other sizes, so it is read first (as in PyTorch).
  for (std::size_t i = 0; i + 2 < tk.size(); ++i) {
    if (tk.at(i) == "large_segment_size_mb" && tk.at(i + 1) == ":") {
      std::size_t mb = tk.to_size(i + 2, "large_segment_size_mb");
      if (mb <= 10) bad_config("large_segment_size_mb must be greater than 10, got " + std::to_string(mb));
      cfg.large_segment_size = mb * kMB;
      cfg.max_non_split_rounding_size = cfg.large_segment_size;
    }
  }
  const std::size_t min_mb = cfg.large_segment_size / kMB;
  for (std::size_t i = 0; i < tk.size(); ++i) {
    const std::string key = tk.at(i);
    if (key == ",") continue;
    const auto& keys = known_keys();
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) {
      std::string hint = closest_key(key);
      bad_config("Unrecognized key '" + key + "' in CUDA allocator config." +
                 (hint.empty() ? std::string() : " Did you mean '" + hint + "'?"));
    }
    tk.expect(++i, ":");
    ++i;
    if (key == "large_segment_size_mb") {
      tk.to_size(i, key);  // already applied above
    } else if (key == "max_split_size_mb") {
      std::size_t mb = tk.to_size(i, key);
      if (mb < min_mb) {
        bad_config("CachingAllocator option max_split_size_mb too small, must be >= " +
                   std::to_string(min_mb));
      }
      cfg.max_split_size = mb >= kUnlimited / kMB ? kUnlimited : mb * kMB;
    } else if (key == "max_non_split_rounding_mb") {
      std::size_t mb = tk.to_size(i, key);
      if (mb < min_mb) {
        bad_config("CachingAllocator option max_non_split_rounding_mb too small, must be >= " +
                   std::to_string(min_mb));
      }
      cfg.max_non_split_rounding_size = mb >= kUnlimited / kMB ? kUnlimited : mb * kMB;
    } else if (key == "garbage_collection_threshold") {
      double v = tk.to_double(i, key);
      if (!(v > 0.0 && v < 1.0)) {
        bad_config("garbage_collect_threshold is invalid, set it in (0.0, 1.0)");
      }
      cfg.garbage_collection_threshold = v;
    } else if (key == "roundup_power2_divisions") {
      i = parse_divisions(tk, i, cfg);
    } else if (key == "per_process_memory_fraction") {
      double v = tk.to_double(i, key);
      if (!(v >= 0.0 && v <= 1.0)) bad_config("per_process_memory_fraction must be in [0, 1]");
      cfg.per_process_memory_fraction = v;
      cfg.per_process_memory_fraction_set = true;
    } else if (key == "backend") {
      const std::string& v = tk.at(i);
      if (v != "native") {
        bad_config("backend:" + v + " is not supported; only backend:native (the caching allocator) is");
      }
    } else if (key == "expandable_segments") {
      cfg.expandable_segments = tk.to_bool(i, key);
    } else if (key == "release_lock_on_cudamalloc") {
      cfg.release_lock_on_cudamalloc = tk.to_bool(i, key);
    } else if (key == "pinned_use_cuda_host_register") {
      cfg.pinned_use_cuda_host_register = tk.to_bool(i, key);
    } else if (key == "pinned_num_register_threads") {
      std::size_t v = tk.to_size(i, key);
      if (!is_power_of_two(v) || v > 128) {
        bad_config("Number of register threads has to be power of 2 and at most 128");
      }
      cfg.pinned_num_register_threads = v;
    } else if (key == "graph_capture_record_stream_reuse") {
      cfg.graph_capture_record_stream_reuse = tk.to_bool(i, key);
    } else if (key == "pinned_use_background_threads" || key == "pinned_free_catch_all" ||
               key == "throw_on_cudamalloc_oom") {
      tk.to_bool(i, key);
    } else if (key == "pinned_reserve_segment_size_mb") {
      if (tk.to_size(i, key) == 0) bad_config("pinned_reserve_segment_size_mb must be > 0");
    }
    if (i + 1 < tk.size()) tk.expect(++i, ",");
  }
  return cfg;
}

AllocatorConfig AllocatorConfig::from_environment() {
  for (const char* name : {"CCA_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF"}) {
    if (const char* v = std::getenv(name)) return parse(v);
  }
  return AllocatorConfig{};
}

}  // namespace cca
