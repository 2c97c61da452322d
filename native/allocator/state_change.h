// One transition's effect on the stats: each touched block or segment is recorded before
// and after the mutation, and the net change is committed at once (see stats.h).
#pragma once
#include "stats.h"

namespace cca {

class StateChange {
 public:
  void before(const Block& b) { delta_.add_block(b, -1); }
  void after(const Block& b) { delta_.add_block(b, +1); }
  void before(const Segment& s) { delta_.add_segment(s, -1); }
  void after(const Segment& s) { delta_.add_segment(s, +1); }
  const StatDelta& delta() const { return delta_; }

 private:
  StatDelta delta_;
};

}  // namespace cca
