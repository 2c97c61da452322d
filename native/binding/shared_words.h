// Numbers this environment's JS and the addon both read and write without a call: a plain
// ArrayBuffer made on JS's first request, the same memory after (pending_frees.h and
// call_slots.h say what each holds). Until JS asks, the addon reads zeros of its own. Only
// the environment's thread touches them.
#pragma once
#include <napi.h>

#include <algorithm>
#include <cstddef>

namespace cca::binding {

template <std::size_t N>
class SharedWords {
 public:
  Napi::Float64Array array(Napi::Env env) {
    if (keep_.IsEmpty()) {
      Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, N * sizeof(double));
      std::copy_n(unshared_, N, static_cast<double*>(buffer.Data()));
      keep_ = Napi::Persistent(buffer);
      words_ = static_cast<double*>(buffer.Data());
    }
    return Napi::Float64Array::New(env, N, keep_.Value(), 0);
  }
  double* words() { return words_; }
  const double* words() const { return words_; }

 private:
  double unshared_[N] = {};
  double* words_ = unshared_;
  Napi::Reference<Napi::ArrayBuffer> keep_;
};

}  // namespace cca::binding
