#include "thread_frees.h"

namespace cca {

namespace {
struct ThreadFrees {
  HandOverFrees hand_over = nullptr;
  void* context = nullptr;
};
thread_local ThreadFrees t_frees;
}  // namespace

void set_thread_frees(HandOverFrees hand_over, void* context) noexcept { t_frees = ThreadFrees{hand_over, context}; }

void hand_over_thread_frees() {
  if (t_frees.hand_over != nullptr) t_frees.hand_over(t_frees.context);
}

}  // namespace cca
