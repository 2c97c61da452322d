// NVRTC behind the compiler contract (../compiler.h), opened with dlopen as the driver is,
// so nothing links against the CUDA toolkit and a machine without it gets a reason. The
// entry points are declared here from NVRTC's documented C ABI (the same in 12 and 13).
#include <dlfcn.h>

#include <cstdlib>
#include <type_traits>
#include <vector>

#include "../compiler.h"

namespace cca {

namespace {

using nvrtcResult = int;
using nvrtcProgram = struct _nvrtcProgram*;
constexpr nvrtcResult kNvrtcSuccess = 0;

struct NvrtcApi {
  const char* (*nvrtcGetErrorString)(nvrtcResult);
  nvrtcResult (*nvrtcVersion)(int*, int*);
  nvrtcResult (*nvrtcGetNumSupportedArchs)(int*);
  nvrtcResult (*nvrtcGetSupportedArchs)(int*);
  nvrtcResult (*nvrtcCreateProgram)(nvrtcProgram*, const char*, const char*, int, const char* const*, const char* const*);
  nvrtcResult (*nvrtcDestroyProgram)(nvrtcProgram*);
  nvrtcResult (*nvrtcCompileProgram)(nvrtcProgram, int, const char* const*);
  nvrtcResult (*nvrtcGetPTXSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetPTX)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetCUBINSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetCUBIN)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcGetProgramLogSize)(nvrtcProgram, std::size_t*);
  nvrtcResult (*nvrtcGetProgramLog)(nvrtcProgram, char*);
  nvrtcResult (*nvrtcAddNameExpression)(nvrtcProgram, const char*);
  nvrtcResult (*nvrtcGetLoweredName)(nvrtcProgram, const char*, const char**);
};

struct Library {
  CompilerInfo info;
  NvrtcApi api{};
};

void* open_first(std::vector<std::string>& tried, std::string& path) {
  std::vector<std::string> candidates;
  if (const char* p = std::getenv("CCA_NVRTC_PATH"); p != nullptr && *p != 0) {
    candidates.push_back(p);  // named: nothing else is tried
  } else {
    candidates = {"libnvrtc.so.13", "libnvrtc.so.12"};
    std::vector<std::string> roots;
    if (const char* home = std::getenv("CUDA_HOME"); home != nullptr && *home != 0) roots.push_back(home);
    roots.push_back("/usr/local/cuda");
    for (const std::string& root : roots) {
      for (const char* version : {"13", "12"}) candidates.push_back(root + "/lib64/libnvrtc.so." + version);
    }
  }
  for (const std::string& c : candidates) {
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      path = c;
      return h;
    }
    const char* why = dlerror();
    tried.push_back(c + (why ? std::string(" (") + why + ")" : ""));
  }
  return nullptr;
}

const Library& library() {
  static const Library* lib = [] {
    auto* l = new Library();  // never closed, like the driver
    std::vector<std::string> tried;
    void* h = open_first(tried, l->info.path);
    if (h == nullptr) {
      l->info.reason = "NVRTC not found: tried ";
      for (std::size_t i = 0; i < tried.size(); ++i) l->info.reason += (i ? "; " : "") + tried[i];
      l->info.reason += ". Install the CUDA toolkit's NVRTC (or pip's nvidia-cuda-nvrtc) and set CCA_NVRTC_PATH";
      return l;
    }
    std::string missing;
    auto resolve = [&](auto& slot, const char* name) {
      void* sym = dlsym(h, name);
      slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(sym);
      if (sym == nullptr) missing += std::string(missing.empty() ? "" : ", ") + name;
    };
#define CCA_NVRTC(name) resolve(l->api.name, #name)
    CCA_NVRTC(nvrtcGetErrorString);
    CCA_NVRTC(nvrtcVersion);
    CCA_NVRTC(nvrtcGetNumSupportedArchs);
    CCA_NVRTC(nvrtcGetSupportedArchs);
    CCA_NVRTC(nvrtcCreateProgram);
    CCA_NVRTC(nvrtcDestroyProgram);
    CCA_NVRTC(nvrtcCompileProgram);
    CCA_NVRTC(nvrtcGetPTXSize);
    CCA_NVRTC(nvrtcGetPTX);
    CCA_NVRTC(nvrtcGetCUBINSize);
    CCA_NVRTC(nvrtcGetCUBIN);
    CCA_NVRTC(nvrtcGetProgramLogSize);
    CCA_NVRTC(nvrtcGetProgramLog);
    CCA_NVRTC(nvrtcAddNameExpression);
    CCA_NVRTC(nvrtcGetLoweredName);
#undef CCA_NVRTC
    if (!missing.empty()) {
      l->info.reason = l->info.path + " lacks " + missing + " (NVRTC older than 11.2?)";
      return l;
    }
    l->api.nvrtcVersion(&l->info.major, &l->info.minor);
    int n = 0;
    if (l->api.nvrtcGetNumSupportedArchs(&n) == kNvrtcSuccess && n > 0 && n < 1000) {
      l->info.architectures.resize(static_cast<std::size_t>(n));
      l->api.nvrtcGetSupportedArchs(l->info.architectures.data());
    }
    l->info.available = true;
    return l;
  }();
  return *lib;
}

std::string error_name(const NvrtcApi& api, nvrtcResult r) {
  const char* s = api.nvrtcGetErrorString(r);
  return s ? s : "NVRTC error " + std::to_string(r);
}

}  // namespace

CompilerInfo compiler_info() { return library().info; }

CompileResult compile(const CompileRequest& request) {
  const Library& lib = library();
  CompileResult out;
  if (!lib.info.available) {
    out.error = lib.info.reason;
    return out;
  }
  const NvrtcApi& api = lib.api;
  std::vector<const char*> header_sources, header_names, options;
  for (const auto& [name, contents] : request.headers) {
    header_names.push_back(name.c_str());
    header_sources.push_back(contents.c_str());
  }
  for (const std::string& o : request.options) options.push_back(o.c_str());
  nvrtcProgram program = nullptr;
  nvrtcResult r = api.nvrtcCreateProgram(&program, request.source.c_str(), request.name.c_str(),
                                         static_cast<int>(header_names.size()), header_sources.data(),
                                         header_names.data());
  if (r != kNvrtcSuccess) {
    out.error = "nvrtcCreateProgram: " + error_name(api, r);
    return out;
  }
  struct Destroy {
    const NvrtcApi& api;
    nvrtcProgram* p;
    ~Destroy() { api.nvrtcDestroyProgram(p); }
  } destroy{api, &program};
  for (const std::string& e : request.name_expressions) {
    r = api.nvrtcAddNameExpression(program, e.c_str());
    if (r != kNvrtcSuccess) {
      out.error = "nvrtcAddNameExpression(" + e + "): " + error_name(api, r);
      return out;
    }
  }
  const nvrtcResult compiled = api.nvrtcCompileProgram(program, static_cast<int>(options.size()), options.data());
  std::size_t log_size = 0;
  if (api.nvrtcGetProgramLogSize(program, &log_size) == kNvrtcSuccess && log_size > 1) {
    out.log.resize(log_size);
    api.nvrtcGetProgramLog(program, out.log.data());
    out.log.resize(log_size - 1);  // the size counts the NUL
  }
  if (compiled != kNvrtcSuccess) {
    out.error = error_name(api, compiled);
    return out;
  }
  std::size_t size = 0;
  r = request.cubin ? api.nvrtcGetCUBINSize(program, &size) : api.nvrtcGetPTXSize(program, &size);
  if (r == kNvrtcSuccess) {
    out.image.resize(size);
    r = request.cubin ? api.nvrtcGetCUBIN(program, out.image.data()) : api.nvrtcGetPTX(program, out.image.data());
  }
  if (r != kNvrtcSuccess) {
    out.error = std::string(request.cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX") + ": " + error_name(api, r) +
                (request.cubin ? " (CUBIN needs a real architecture: sm_XY, not compute_XY)" : "");
    return out;
  }
  for (const std::string& e : request.name_expressions) {
    const char* lowered = nullptr;
    r = api.nvrtcGetLoweredName(program, e.c_str(), &lowered);
    if (r != kNvrtcSuccess || lowered == nullptr) {
      out.error = "nvrtcGetLoweredName(" + e + "): " + error_name(api, r);
      return out;
    }
    out.lowered.emplace_back(e, lowered);
  }
  out.ok = true;
  return out;
}

}  // namespace cca
