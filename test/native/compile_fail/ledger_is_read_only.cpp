// Code outside the ledger can read its state but not write it: each CASE below must fail
// to compile (ctest runs the compiler on each, expecting failure), and CASE 0, the same
// reads without a write, must compile, so a failure is the write's and not a broken include.
#include "allocator/state/ledger.h"

using namespace cca;

void outside(Ledger& ledger, DevicePtr p) {
  const Block* b = ledger.find_allocated(p);
  const Segment* s = ledger.segment_containing(p);
  (void)b;
  (void)s;
#if CASE == 1
  b->size = 0;  // a block handed out by the ledger is const
#elif CASE == 2
  b->next->state = BlockState::kFree;  // and so is every block reached through its links
#elif CASE == 3
  b->segment->head->size = 0;  // or through its segment
#elif CASE == 4
  ledger.default_pool(true).erase(nullptr);  // the free pools are const outside
#elif CASE == 5
  b->pool->get_free_blocks_call_count = 0;  // also when reached from a block
#elif CASE == 6
  ledger.stats_.num_ooms = 0;  // the stats are private; reading goes through stats()
#elif CASE == 7
  ledger.stats().reset_peak();  // and what stats() returns is const
#elif CASE == 8
  ledger.commit(StateChange{});  // committing is the transitions' own step
#endif
}
