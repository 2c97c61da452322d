// Rule 6 of Note [Private pools read from a trace that names none] (pools.ts): under
// max_split_size_mb or a garbage-collection threshold, the pool of an OOM, read from the
// allocations either side of it.
import type { TraceEntry } from '../snapshot/types.js';

/** An OOM whose pool the neighbours leave open, and the reading it was given. */
export interface OpenOom {
  at: number;
  inPool: boolean;
}

/**
 * Sets `pool_id` on the OOMs of `out` (a trace with its pools read) that were a pool's
 * request: one between two allocations of a pool is that pool's; one beside an allocation of
 * a live pool on the OOM's own stream (the one before preferred) is open, read in the default
 * pools unless `forced` says otherwise. Returns the open ones.
 */
export function readOomPools(out: TraceEntry[], forced: ReadonlyMap<number, boolean>): OpenOom[] {
  const open: OpenOom[] = [];
  const poolAt = (i: number) => (out[i]!.pool_id as number[] | undefined)?.[1] ?? 0;
  const ended = new Map<number, number>();  // each ended pool's first segment free
  out.forEach((e, i) => {
    if (e.action === 'segment_free' && poolAt(i) !== 0 && !ended.has(poolAt(i))) ended.set(poolAt(i), i);
  });
  let before = -1;
  let after = 0;
  for (let i = 0; i < out.length; i++) {
    const e = out[i]!;
    if (e.action === 'alloc') before = i;
    if (e.action !== 'oom') continue;
    if (after <= i) for (after = i + 1; after < out.length && out[after]!.action !== 'alloc';) after++;
    // The pools of the allocations either side: the one before only while it lives.
    const prev = before >= 0 && (ended.get(poolAt(before)) ?? Infinity) > i ? poolAt(before) : 0;
    const next = after < out.length ? poolAt(after) : 0;
    let pool = 0;
    if (prev !== 0 && prev === next) {
      pool = prev;
    } else if (prev !== 0 && out[before]!.stream === e.stream) {
      pool = prev;
    } else if (next !== 0 && out[after]!.stream === e.stream) {
      pool = next;
    }
    if (pool === 0) continue;
    let inPool = true;
    if (prev !== next) {
      inPool = forced.get(i) ?? false;
      open.push({ at: i, inPool });
    }
    if (inPool) out[i] = { ...e, pool_id: [0, pool] };
  }
  return open;
}
