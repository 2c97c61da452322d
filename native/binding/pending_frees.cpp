#include "pending_frees.h"

#include <algorithm>

#include "args.h"

namespace cca::binding {

double PendingFreeList::none_[1] = {0};

Napi::Float64Array PendingFreeList::array(Napi::Env env) {
  constexpr std::size_t kWords = 1 + 2 * kPendingFreeCapacity;
  if (keep_.IsEmpty()) {
    Napi::ArrayBuffer buffer = Napi::ArrayBuffer::New(env, kWords * sizeof(double));
    std::fill_n(static_cast<double*>(buffer.Data()), kWords, 0.0);
    keep_ = Napi::Persistent(buffer);
    words_ = static_cast<double*>(buffer.Data());
  }
  return Napi::Float64Array::New(env, kWords, keep_.Value(), 0);
}

void PendingFreeList::hand_over(Runtime& runtime) {
  const auto count = static_cast<std::size_t>(words_[0]);
  double* pairs = words_ + 1;
  for (std::size_t i = 0; i < count; ++i) {
    try {
      runtime.allocator(to_device(pairs[2 * i])).free(to_u64(pairs[2 * i + 1], "ptr"));
    } catch (...) {
      std::copy(pairs + 2 * (i + 1), pairs + 2 * count, pairs);
      words_[0] = static_cast<double>(count - i - 1);
      throw;
    }
  }
  words_[0] = 0;
}

}  // namespace cca::binding
