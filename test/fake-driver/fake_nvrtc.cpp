// A fake NVRTC for tests (CCA_NVRTC_PATH=.../libfakenvrtc.so), so the compile path and its
// errors run in CI with no CUDA toolkit. It "compiles" to the fake driver's module format:
// the extern "C" __global__ kernels it finds, each of which must be one of the fake driver's
// CPU kernels to load. What it checks, as NVRTC would: the architecture option, #include of
// a header it was not given, #error, and FAKE_REQUIRE_DEFINE(X) (fails unless -DX was
// given). Name expressions lower fill<unsigned int> and fill<unsigned long long> to the
// fake driver's fill_u32 and fill_u64. The log of a success lists the options received.
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#define FAKE extern "C" __attribute__((visibility("default")))

namespace {

using nvrtcResult = int;
constexpr nvrtcResult kSuccess = 0, kInvalidInput = 3, kInvalidProgram = 4, kInvalidOption = 5, kCompilation = 6,
                      kNameExpressionNotValid = 10;

struct Program {
  std::string source, name;
  std::vector<std::pair<std::string, std::string>> headers;
  std::vector<std::string> expressions;
  std::vector<std::pair<std::string, std::string>> lowered;
  std::string log, output;
  bool compiled = false, virtual_arch = false;
};

const int kArchs[] = {75, 80, 86, 87, 89, 90, 100, 120};

std::string lower(const std::string& expression) {
  if (expression == "fill<unsigned int>" || expression == "fill<unsigned>") return "fill_u32";
  if (expression == "fill<unsigned long long>") return "fill_u64";
  std::string out = "_Z";
  for (char c : expression) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

nvrtcResult fail(Program* p, int line, const std::string& what) {
  p->log = p->name + "(" + std::to_string(line) + "): error: " + what + "\n\n1 error detected in the compilation of \"" +
           p->name + "\".\n";
  return kCompilation;
}

}  // namespace

FAKE const char* nvrtcGetErrorString(nvrtcResult r) {
  switch (r) {
    case kSuccess: return "NVRTC_SUCCESS";
    case kInvalidInput: return "NVRTC_ERROR_INVALID_INPUT";
    case kInvalidProgram: return "NVRTC_ERROR_INVALID_PROGRAM";
    case kInvalidOption: return "NVRTC_ERROR_INVALID_OPTION";
    case kCompilation: return "NVRTC_ERROR_COMPILATION";
    case kNameExpressionNotValid: return "NVRTC_ERROR_NAME_EXPRESSION_NOT_VALID";
    default: return "NVRTC_ERROR_INTERNAL_ERROR";
  }
}

FAKE nvrtcResult nvrtcVersion(int* major, int* minor) {
  *major = 13;
  *minor = 0;
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetNumSupportedArchs(int* n) {
  *n = static_cast<int>(sizeof kArchs / sizeof kArchs[0]);
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetSupportedArchs(int* out) {
  std::memcpy(out, kArchs, sizeof kArchs);
  return kSuccess;
}

FAKE nvrtcResult nvrtcCreateProgram(Program** out, const char* src, const char* name, int n, const char* const* sources,
                                    const char* const* names) {
  if (out == nullptr || src == nullptr) return kInvalidInput;
  auto* p = new Program{};
  p->source = src;
  p->name = name ? name : "default_program";
  for (int i = 0; i < n; ++i) p->headers.emplace_back(names[i], sources[i]);
  *out = p;
  return kSuccess;
}

FAKE nvrtcResult nvrtcDestroyProgram(Program** p) {
  delete *p;
  *p = nullptr;
  return kSuccess;
}

FAKE nvrtcResult nvrtcAddNameExpression(Program* p, const char* e) {
  p->expressions.emplace_back(e);
  return kSuccess;
}

FAKE nvrtcResult nvrtcCompileProgram(Program* p, int n, const char* const* options) {
  std::string arch, listed;
  std::vector<std::string> defines;
  for (int i = 0; i < n; ++i) {
    std::string o = options[i];
    listed += (i ? " " : "") + o;
    for (const char* prefix : {"--gpu-architecture=", "-arch="}) {
      if (o.rfind(prefix, 0) == 0) arch = o.substr(std::strlen(prefix));
    }
    if (o.rfind("-D", 0) == 0) defines.push_back(o.substr(2, o.find('=') == std::string::npos ? std::string::npos : o.find('=') - 2));
  }
  const bool is_sm = arch.rfind("sm_", 0) == 0, is_compute = arch.rfind("compute_", 0) == 0;
  bool known = false;
  if (is_sm || is_compute) {
    const int number = std::atoi(arch.c_str() + (is_sm ? 3 : 8));
    for (int a : kArchs) known = known || a == number;
  }
  if (!known) {
    p->log = "nvrtc: error: invalid value for --gpu-architecture (-arch)\n";
    return kInvalidOption;
  }
  p->virtual_arch = is_compute;
  std::vector<std::string> kernels;
  int line = 1;
  for (std::size_t at = 0; at < p->source.size(); ++line) {
    std::size_t end = p->source.find('\n', at);
    if (end == std::string::npos) end = p->source.size();
    const std::string text = p->source.substr(at, end - at);
    at = end + 1;
    if (text.rfind("#error", 0) == 0) return fail(p, line, "#error directive: " + text.substr(6));
    if (text.rfind("#include \"", 0) == 0) {
      const std::string header = text.substr(10, text.find('"', 10) - 10);
      bool found = false;
      for (const auto& h : p->headers) found = found || h.first == header;
      if (!found) return fail(p, line, "cannot open source file \"" + header + "\"");
    }
    if (std::size_t r = text.find("FAKE_REQUIRE_DEFINE("); r != std::string::npos) {
      const std::size_t open = r + std::strlen("FAKE_REQUIRE_DEFINE(");
      const std::string name = text.substr(open, text.find(')', open) - open);
      bool given = false;
      for (const auto& d : defines) given = given || d == name;
      if (!given) return fail(p, line, "identifier \"" + name + "\" is undefined");
    }
    const std::string marker = "extern \"C\" __global__ void ";
    if (std::size_t k = text.find(marker); k != std::string::npos) {
      const std::size_t start = k + marker.size();
      kernels.push_back(text.substr(start, text.find('(', start) - start));
    }
  }
  p->lowered.clear();
  for (const std::string& e : p->expressions) {
    p->lowered.emplace_back(e, lower(e));
    kernels.push_back(lower(e));
  }
  p->output = "FAKECUBIN\n";
  for (const std::string& k : kernels) p->output += k + "\n";
  p->output.push_back('\0');
  p->log = "options: " + listed + "\n";
  p->compiled = true;
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetProgramLogSize(Program* p, std::size_t* n) {
  *n = p->log.size() + 1;
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetProgramLog(Program* p, char* out) {
  std::memcpy(out, p->log.c_str(), p->log.size() + 1);
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetPTXSize(Program* p, std::size_t* n) {
  if (!p->compiled) return kInvalidProgram;
  *n = p->output.size();
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetPTX(Program* p, char* out) {
  if (!p->compiled) return kInvalidProgram;
  std::memcpy(out, p->output.data(), p->output.size());
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetCUBINSize(Program* p, std::size_t* n) {
  if (!p->compiled || p->virtual_arch) return kInvalidInput;  // no CUBIN for a virtual architecture
  *n = p->output.size();
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetCUBIN(Program* p, char* out) {
  if (!p->compiled || p->virtual_arch) return kInvalidInput;
  std::memcpy(out, p->output.data(), p->output.size());
  return kSuccess;
}

FAKE nvrtcResult nvrtcGetLoweredName(Program* p, const char* e, const char** out) {
  for (const auto& [expression, name] : p->lowered) {
    if (expression == e) {
      *out = name.c_str();
      return kSuccess;
    }
  }
  return kNameExpressionNotValid;
}
