// The two sizes replay reads a recording by: the allocator's own constants (size_policy.h),
// held equal to it by test/contract/options-table.test.ts.
const MiB = 1024 * 1024;
/** The small pool's segment size. */
export const SMALL_SEGMENT = 2 * MiB;
/** PyTorch's kSmallSize: requests this size or less go to the small pool, and a large-pool
 *  remainder this size or less is not split off. */
export const SMALL_SIZE = MiB;
