#include "config.h"

#include <cctype>
#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "options.h"

// Reading a config string: PyTorch's tokens, then each key's row of the options table
// (options.cpp) reads, checks and stores its value. No option is named here.
namespace cca {

namespace {

constexpr Bytes kMB = Bytes{1} << 20;

bool is_power_of_two(Bytes v) { return v != 0 && (v & (v - 1)) == 0; }

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
  Bytes to_size(std::size_t i, const std::string& key) const {
    const std::string& s = at(i);
    if (s.empty() || s.size() > 19 ||
        s.find_first_not_of("0123456789") != std::string::npos) {
      bad_config("Expected a non-negative integer for " + key + " but got '" + s + "'");
    }
    return static_cast<Bytes>(std::strtoull(s.c_str(), nullptr, 10));
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

// A power of two for every bucket, or a list [64:8,256:4,>:1]; returns the last token read.
std::size_t parse_divisions(const Tokens& tk, std::size_t i, const std::string& key, OptionValue& out) {
  auto& div = out.divisions;
  if (tk.at(i) != "[") {
    Bytes value = tk.to_size(i, key);
    if (!is_power_of_two(value)) bad_config("For roundups, the divisions has to be power of 2");
    div.fill(value);
    return i;
  }
  bool first = true;
  std::size_t last_index = 0;
  while (++i < tk.size() && tk.at(i) != "]") {
    std::size_t key_index = i;
    tk.expect(++i, ":");
    Bytes value = tk.to_size(++i, key);
    if (value != 0 && !is_power_of_two(value)) {
      bad_config("For roundups, the divisions has to be power of 2 or 0 to disable roundup");
    }
    if (tk.at(key_index) == ">") {
      for (std::size_t k = last_index + 1; k < div.size(); ++k) div[k] = value;
    } else {
      Bytes boundary_mb = tk.to_size(key_index, key);
      if (!is_power_of_two(boundary_mb)) bad_config("For roundups, the intervals have to be power of 2");
      std::size_t index = 0;
      while ((Bytes{1} << (index + 1)) <= boundary_mb) ++index;
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

// Reads the value of `spec` starting at token i; returns the last token it used.
std::size_t read_value(const Tokens& tk, std::size_t i, const OptionSpec& spec, OptionValue& out) {
  const std::string key = spec.key;
  switch (spec.kind) {
    case OptionKind::kMegabytes:
    case OptionKind::kCount:
      out.integer = tk.to_size(i, key);
      return i;
    case OptionKind::kNumber:
      out.number = tk.to_double(i, key);
      return i;
    case OptionKind::kBoolean:
      out.boolean = tk.to_bool(i, key);
      return i;
    case OptionKind::kWord:
      out.word = tk.at(i);
      return i;
    case OptionKind::kDivisions:
      return parse_divisions(tk, i, key, out);
  }
  return i;
}

const OptionSpec* find_option(const std::string& key) {
  for (const OptionSpec& o : allocator_options()) {
    if (key == o.key) return &o;
  }
  return nullptr;
}

std::string closest_key(const std::string& key) {
  // A hint for misspellings: the known key sharing the longest prefix.
  std::string best;
  Bytes best_len = 2;
  for (const OptionSpec& o : allocator_options()) {
    const std::string k = o.key;
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
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const OptionSpec& o : allocator_options()) out.emplace_back(o.key);
    return out;
  }();
  return keys;
}

AllocatorConfig AllocatorConfig::parse(const std::string& text) {
  AllocatorConfig cfg;
  cfg.source = text;
  Tokens tk(tokenize(text));
  // Options that bound others (large_segment_size_mb) are applied first, wherever they
  // stand, as in PyTorch.
  for (std::size_t i = 0; i + 2 < tk.size(); ++i) {
    const OptionSpec* o = find_option(tk.at(i));
    if (o != nullptr && o->first && tk.at(i + 1) == ":") {
      OptionValue v;
      read_value(tk, i + 2, *o, v);
      o->apply(v, OptionContext{o->key, cfg.large_segment_size / kMB}, cfg);
    }
  }
  const Bytes min_segment_mb = cfg.large_segment_size / kMB;
  for (std::size_t i = 0; i < tk.size(); ++i) {
    const std::string key = tk.at(i);
    if (key == ",") continue;
    const OptionSpec* o = find_option(key);
    if (o == nullptr) {
      std::string hint = closest_key(key);
      bad_config("Unrecognized key '" + key + "' in CUDA allocator config." +
                 (hint.empty() ? std::string() : " Did you mean '" + hint + "'?"));
    }
    tk.expect(++i, ":");
    OptionValue v;
    i = read_value(tk, i + 1, *o, v);
    if (!o->first) o->apply(v, OptionContext{o->key, min_segment_mb}, cfg);
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
