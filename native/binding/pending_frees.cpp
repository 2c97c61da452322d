#include "pending_frees.h"

#include <algorithm>

#include "args.h"

namespace cca::binding {

void PendingFreeList::hand_over(Runtime& runtime) {
  double* words = words_.words();
  const auto count = static_cast<std::size_t>(words[0]);
  double* pairs = words + 1;
  for (std::size_t i = 0; i < count; ++i) {
    try {
      runtime.allocator(to_device(pairs[2 * i])).free(to_u64(pairs[2 * i + 1], "ptr"));
    } catch (...) {
      std::copy(pairs + 2 * (i + 1), pairs + 2 * count, pairs);
      words[0] = static_cast<double>(count - i - 1);
      throw;
    }
  }
  words[0] = 0;
}

}  // namespace cca::binding
