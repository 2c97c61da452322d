// Compiling CUDA C++ at run time to something a KernelEngine loads (CUBIN or PTX). It needs
// no GPU: the compiler is a library of its own (NVRTC, opened with dlopen by cuda/nvrtc.cpp),
// so it works on the simulated backend too, where its output can be kept or shipped.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace cca {

struct CompilerInfo {
  bool available = false;
  std::string reason;  // why not, naming every library tried
  std::string path;    // the library used
  int major = 0, minor = 0;
  std::vector<int> architectures;  // the sm_XY it can target, as XY
};

struct CompileRequest {
  std::string source;
  std::string name;  // the program's file name, as messages show it
  std::vector<std::string> options;  // --gpu-architecture=..., -D..., ...
  std::vector<std::pair<std::string, std::string>> headers;  // include name -> contents
  std::vector<std::string> name_expressions;  // kernels by C++ expression (templates)
  bool cubin = true;  // CUBIN for one architecture, else PTX
};

struct CompileResult {
  bool ok = false;
  std::string error;  // the compiler's word for a failure ("NVRTC_ERROR_COMPILATION")
  std::string log;
  std::string image;  // CUBIN bytes, or PTX text
  std::vector<std::pair<std::string, std::string>> lowered;  // expression -> mangled name
};

// The process's compiler, found once: CCA_NVRTC_PATH, else libnvrtc.so.13, .so.12 on the
// loader's path, else under CUDA_HOME and /usr/local/cuda.
CompilerInfo compiler_info();
// Thread-safe; runs on the caller's thread (the binding calls it off the main thread).
CompileResult compile(const CompileRequest& request);

}  // namespace cca
