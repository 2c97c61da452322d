// memory.memory_stats_by_tag(): live memory per label ("what is this memory for?") without a
// snapshot. Counted in the core as tagged blocks are handed out and freed.
import { native } from './native.js';
import { resolveDevice } from './device.js';
import { tags } from './history/stack-store.js';

export interface TagStats {
  /** Block sizes of the tag's live allocations (as `allocated_bytes`). */
  allocated_bytes: { current: number; peak: number };
  /** What their callers asked for (as `requested_bytes`). */
  requested_bytes: { current: number; peak: number };
  allocation: { current: number; peak: number };
}

/**
 * Live memory per tag on a device: every label this JS environment used (the `tag` of
 * `cuda.alloc`, `_set_memory_metadata`, `withMemoryMetadata`) and each native client of the
 * C ABI by name, with current and peak (since `reset_peak_memory_stats`). A worker thread's
 * labels are in the worker's own view (PyTorch keeps labels per thread); untagged memory is
 * not listed, so `memory_allocated()` minus the sum is untagged or other threads' memory.
 * In order of current bytes, most first (labels that look like integers come first:
 * JavaScript orders such keys so).
 */
export function memory_stats_by_tag(device?: number): Record<string, TagStats> {
  const rows = native.tagStats(resolveDevice(device));
  const list: Array<[string, TagStats]> = [];
  for (let i = 0; i < rows.length; i += 7) {
    list.push([tags.name(rows[i]!), {
      allocated_bytes: { current: rows[i + 1]!, peak: rows[i + 2]! },
      requested_bytes: { current: rows[i + 3]!, peak: rows[i + 4]! },
      allocation: { current: rows[i + 5]!, peak: rows[i + 6]! },
    }]);
  }
  list.sort((a, b) => b[1].allocated_bytes.current - a[1].allocated_bytes.current || (a[0] < b[0] ? -1 : 1));
  return Object.fromEntries(list);
}
