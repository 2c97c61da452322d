// The fake driver's modules and kernels. A module is text of the fake's own format,
// "FAKECUBIN\n" then one kernel name per line, NUL-terminated (real CUBIN, fatbin or PTX is
// refused with CUDA_ERROR_INVALID_IMAGE); each name must be one of the CPU kernels below,
// which run when their stream runs them (deferred on a held stream), over the launch's
// grid x block threads. A kernel that touches memory outside every allocation faults the
// context, as an illegal address does on a GPU: every later call fails with it.
#include <algorithm>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "fake_state.h"

using namespace fake;

namespace {

// The kernels, with the parameter layout nvcc would give them (offset, size).
struct Kernel {
  std::vector<std::pair<std::size_t, std::size_t>> params;
  // Runs the whole launch over `threads` threads; returns a sticky error or kSuccess.
  CUresult (*run)(const unsigned char* params, std::uint64_t threads);
};

template <class T>
T arg(const unsigned char* params, std::size_t offset) {
  T v;
  std::memcpy(&v, params + offset, sizeof v);
  return v;
}

// saxpy(float a, const float* x, float* y, unsigned n): y[i] = a * x[i] + y[i]
CUresult saxpy(const unsigned char* p, std::uint64_t threads) {
  const float a = arg<float>(p, 0);
  const auto x = arg<unsigned long long>(p, 8), y = arg<unsigned long long>(p, 16);
  const std::uint64_t n = std::min<std::uint64_t>(arg<unsigned>(p, 24), threads);
  if (n > 0 && (!inside(x, n * 4) || !inside(y, n * 4))) return kIllegalAddress;
  for (std::uint64_t i = 0; i < n; ++i) {
    reinterpret_cast<float*>(y)[i] = a * reinterpret_cast<const float*>(x)[i] + reinterpret_cast<float*>(y)[i];
  }
  return kSuccess;
}

// fill_u32(unsigned* p, unsigned value, unsigned n)
CUresult fill_u32(const unsigned char* p, std::uint64_t threads) {
  const auto out = arg<unsigned long long>(p, 0);
  const unsigned value = arg<unsigned>(p, 8);
  const std::uint64_t n = std::min<std::uint64_t>(arg<unsigned>(p, 12), threads);
  if (n > 0 && !inside(out, n * 4)) return kIllegalAddress;
  for (std::uint64_t i = 0; i < n; ++i) reinterpret_cast<unsigned*>(out)[i] = value;
  return kSuccess;
}

// fill_u64(unsigned long long* p, unsigned long long value, unsigned n)
CUresult fill_u64(const unsigned char* p, std::uint64_t threads) {
  const auto out = arg<unsigned long long>(p, 0);
  const auto value = arg<unsigned long long>(p, 8);
  const std::uint64_t n = std::min<std::uint64_t>(arg<unsigned>(p, 16), threads);
  if (n > 0 && !inside(out, n * 8)) return kIllegalAddress;
  for (std::uint64_t i = 0; i < n; ++i) reinterpret_cast<unsigned long long*>(out)[i] = value;
  return kSuccess;
}

// affine(struct { float scale; float shift; } s, float* y, unsigned n): y[i] = y[i] * scale + shift
CUresult affine(const unsigned char* p, std::uint64_t threads) {
  const float scale = arg<float>(p, 0), shift = arg<float>(p, 4);
  const auto y = arg<unsigned long long>(p, 8);
  const std::uint64_t n = std::min<std::uint64_t>(arg<unsigned>(p, 16), threads);
  if (n > 0 && !inside(y, n * 4)) return kIllegalAddress;
  for (std::uint64_t i = 0; i < n; ++i) reinterpret_cast<float*>(y)[i] = reinterpret_cast<float*>(y)[i] * scale + shift;
  return kSuccess;
}

// scale(float* y, float a, unsigned n): y[i] *= a (docs/compute.md's example)
CUresult scale(const unsigned char* p, std::uint64_t threads) {
  const auto y = arg<unsigned long long>(p, 0);
  const float a = arg<float>(p, 8);
  const std::uint64_t n = std::min<std::uint64_t>(arg<unsigned>(p, 12), threads);
  if (n > 0 && !inside(y, n * 4)) return kIllegalAddress;
  for (std::uint64_t i = 0; i < n; ++i) reinterpret_cast<float*>(y)[i] *= a;
  return kSuccess;
}

// linear(const float* x, const float* w, const float* b, float* y, unsigned rows, unsigned in,
// unsigned out, unsigned relu): y = x (rows x in) * w (in x out) + b, then max(0, .) if relu
// (examples/mlp-forward.mjs's kernel).
CUresult linear(const unsigned char* p, std::uint64_t threads) {
  const auto x = arg<unsigned long long>(p, 0), w = arg<unsigned long long>(p, 8), b = arg<unsigned long long>(p, 16),
             y = arg<unsigned long long>(p, 24);
  const std::uint64_t rows = arg<unsigned>(p, 32), in = arg<unsigned>(p, 36), out = arg<unsigned>(p, 40);
  const bool relu = arg<unsigned>(p, 44) != 0;
  if (threads < rows * out) return kSuccess;  // a launch too small does nothing here (the GPU's would leave a part)
  if (!inside(x, rows * in * 4) || !inside(w, in * out * 4) || !inside(b, out * 4) || !inside(y, rows * out * 4)) {
    return kIllegalAddress;
  }
  const auto* X = reinterpret_cast<const float*>(x);
  const auto* W = reinterpret_cast<const float*>(w);
  const auto* B = reinterpret_cast<const float*>(b);
  auto* Y = reinterpret_cast<float*>(y);
  for (std::uint64_t r = 0; r < rows; ++r) {
    for (std::uint64_t o = 0; o < out; ++o) {
      float acc = B[o];
      for (std::uint64_t i = 0; i < in; ++i) acc += X[r * in + i] * W[i * out + o];
      Y[r * out + o] = relu && acc < 0 ? 0 : acc;
    }
  }
  return kSuccess;
}

// sum_f32(const float* x, float* out, unsigned n): *out += x[0..n)
CUresult sum_f32(const unsigned char* p, std::uint64_t threads) {
  const auto x = arg<unsigned long long>(p, 0), out = arg<unsigned long long>(p, 8);
  const std::uint64_t n = std::min<std::uint64_t>(arg<unsigned>(p, 16), threads);
  if (!inside(out, 4) || (n > 0 && !inside(x, n * 4))) return kIllegalAddress;
  for (std::uint64_t i = 0; i < n; ++i) *reinterpret_cast<float*>(out) += reinterpret_cast<const float*>(x)[i];
  return kSuccess;
}

// noop(const float* x, unsigned n)
CUresult noop(const unsigned char*, std::uint64_t) { return kSuccess; }

// wait_flag(const unsigned* flag): spins until *flag != 0 (held back in the queue until then).
CUresult wait_flag(const unsigned char* p, std::uint64_t) {
  return inside(arg<unsigned long long>(p, 0), 4) ? kSuccess : kIllegalAddress;
}
bool flag_set(const unsigned char* p) {
  const auto flag = arg<unsigned long long>(p, 0);
  return !inside(flag, 4) || *reinterpret_cast<const volatile unsigned*>(flag) != 0;
}

// trap(): faults, as a device-side trap or an illegal access would.
CUresult trap(const unsigned char*, std::uint64_t) { return kIllegalAddress; }

const std::map<std::string, Kernel>& kernels() {
  static const auto* k = new std::map<std::string, Kernel>{
      {"saxpy", {{{0, 4}, {8, 8}, {16, 8}, {24, 4}}, saxpy}},
      {"fill_u32", {{{0, 8}, {8, 4}, {12, 4}}, fill_u32}},
      {"fill_u64", {{{0, 8}, {8, 8}, {16, 4}}, fill_u64}},
      {"affine", {{{0, 8}, {8, 8}, {16, 4}}, affine}},
      {"scale", {{{0, 8}, {8, 4}, {12, 4}}, scale}},
      {"linear", {{{0, 8}, {8, 8}, {16, 8}, {24, 8}, {32, 4}, {36, 4}, {40, 4}, {44, 4}}, linear}},
      {"sum_f32", {{{0, 8}, {8, 8}, {16, 4}}, sum_f32}},
      {"noop", {{{0, 8}, {8, 4}}, noop}},
      {"wait_flag", {{{0, 8}}, wait_flag}},
      {"trap", {{}, trap}},
  };
  return *k;
}

struct Module {
  std::vector<std::string> names;
};
struct Function {
  Module* module;
  const Kernel* kernel;
  std::string name;
  int max_dynamic_shared = 48 * 1024;
};
std::set<Module*>& modules = *new std::set<Module*>;
std::set<Function*>& functions = *new std::set<Function*>;

std::size_t param_bytes(const Kernel& k) {
  return k.params.empty() ? 0 : k.params.back().first + k.params.back().second;
}

Function* function_of(void* f) {
  auto* fn = static_cast<Function*>(f);
  return functions.count(fn) ? fn : nullptr;
}

}  // namespace

FAKE CUresult cuModuleLoadData(void** out, const void* image) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  const char* text = static_cast<const char*>(image);
  static const char kMagic[] = "FAKECUBIN\n";
  if (std::strncmp(text, kMagic, sizeof kMagic - 1) != 0) return kInvalidImage;
  auto* m = new Module{};
  std::string names(text + sizeof kMagic - 1);
  for (std::size_t at = 0; at < names.size();) {
    std::size_t end = names.find('\n', at);
    if (end == std::string::npos) end = names.size();
    if (end > at) m->names.push_back(names.substr(at, end - at));
    at = end + 1;
  }
  for (const std::string& n : m->names) {
    if (!kernels().count(n)) {
      delete m;
      return kInvalidImage;
    }
  }
  modules.insert(m);
  *out = m;
  return kSuccess;
}

FAKE CUresult cuModuleUnload(void* module) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* m = static_cast<Module*>(module);
  if (!modules.erase(m)) return kInvalidHandle;
  for (auto it = functions.begin(); it != functions.end();) {
    if ((*it)->module == m) {
      delete *it;
      it = functions.erase(it);
    } else {
      ++it;
    }
  }
  delete m;
  return kSuccess;
}

FAKE CUresult cuModuleGetFunction(void** out, void* module, const char* name) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  auto* m = static_cast<Module*>(module);
  if (!modules.count(m)) return kInvalidHandle;
  for (const std::string& n : m->names) {
    if (n == name) {
      for (Function* f : functions) {
        if (f->module == m && f->name == n) {
          *out = f;
          return kSuccess;
        }
      }
      auto* f = new Function{m, &kernels().at(n), n};
      functions.insert(f);
      *out = f;
      return kSuccess;
    }
  }
  return kNotFound;
}

FAKE CUresult cuFuncGetParamInfo(void* f, std::size_t index, std::size_t* offset, std::size_t* size) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  Function* fn = function_of(f);
  if (fn == nullptr) return kInvalidHandle;
  if (index >= fn->kernel->params.size()) return kInvalidValue;
  *offset = fn->kernel->params[index].first;
  *size = fn->kernel->params[index].second;
  return kSuccess;
}

FAKE CUresult cuFuncGetAttribute(int* v, int attribute, void* f) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  Function* fn = function_of(f);
  if (fn == nullptr) return kInvalidHandle;
  switch (attribute) {
    case 0: *v = 1024; break;                     // max threads per block
    case 4: *v = 16; break;                       // registers
    case 5: case 6: *v = 90; break;               // PTX and binary version
    case 8: *v = fn->max_dynamic_shared; break;   // max dynamic shared memory
    default: *v = 0;
  }
  return kSuccess;
}

FAKE CUresult cuFuncSetAttribute(void* f, int attribute, int value) {
  fake::count_call();
  std::lock_guard<std::mutex> lock(mu);
  Function* fn = function_of(f);
  if (fn == nullptr) return kInvalidHandle;
  if (attribute != 8 || value < 0 || value > 232448) return kInvalidValue;
  fn->max_dynamic_shared = value;
  return kSuccess;
}

FAKE CUresult cuLaunchKernel(void* f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                             unsigned shared, void* s, void** kernel_params, void** extra) {
  fake::count_call();
  fake::note_context();
  std::lock_guard<std::mutex> lock(mu);
  FAKE_STICKY();
  Function* fn = function_of(f);
  Stream* st = stream_of(s);
  if (fn == nullptr || st == nullptr) return kInvalidHandle;
  if (gx == 0 || gy == 0 || gz == 0 || bx == 0 || by == 0 || bz == 0 ||
      static_cast<std::uint64_t>(bx) * by * bz > 1024 || static_cast<int>(shared) > fn->max_dynamic_shared) {
    return kInvalidValue;
  }
  // The fake takes its parameters as one buffer (CU_LAUNCH_PARAM_BUFFER_POINTER / _SIZE),
  // the way the backend passes them.
  const std::size_t need = param_bytes(*fn->kernel);
  std::vector<unsigned char> params;
  if (need > 0) {
    if (kernel_params != nullptr || extra == nullptr) return kInvalidValue;
    const void* buffer = nullptr;
    const std::size_t* size = nullptr;
    for (void** e = extra; *e != nullptr; e += 2) {
      if (*e == reinterpret_cast<void*>(1)) buffer = e[1];
      else if (*e == reinterpret_cast<void*>(2)) size = static_cast<const std::size_t*>(e[1]);
      else return kInvalidValue;
    }
    if (buffer == nullptr || size == nullptr || *size < need) return kInvalidValue;
    params.assign(static_cast<const unsigned char*>(buffer), static_cast<const unsigned char*>(buffer) + need);
  }
  const std::uint64_t threads = std::uint64_t{gx} * gy * gz * bx * by * bz;
  const Kernel* kernel = fn->kernel;
  std::function<bool()> ready;
  if (kernel->run == wait_flag) ready = [params] { return flag_set(params.data()); };
  enqueue(st, Op{[kernel, params = std::move(params), threads] {
                   if (sticky != kSuccess) return;
                   CUresult r = kernel->run(params.data(), threads);
                   if (r != kSuccess) sticky = r;
                 },
                 nullptr, std::move(ready)});
  return kSuccess;
}
