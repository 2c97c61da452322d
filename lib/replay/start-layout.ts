// The cache a history began on, as the recording shows it (start-rebuild.ts rebuilds it for
// replay). A history that starts on a warm cache, or whose ring wrapped, begins with segments
// already reserved and blocks already live inside them. Which segments: those of the final state the history did not create,
// and those it freed without creating them. Which blocks: the allocations live then
// (timeline.ts's inferInitialLive). Where they sat: at their recorded offsets, with the gaps
// between them free, so the replayed cache serves the next requests from the same places.
//
// Block sizes: a block still live at the end shows its size in the final state. One freed
// during the history left only its request; it is taken as the request rounded under the
// recorded settings, extended to the next known block (or the segment's end) when the
// allocator would not have split the remainder off: 1 MiB or less in a large pool, or any
// remainder of a request of max_split_size or more (oversize blocks are never split). It is
// the allocator's own rule, so such a gap cannot have been free.
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import type { LiveAllocation } from '../analysis/timeline.js';
import { rangeHolding } from '../analysis/ranges.js';
import { settingsDict, sizePolicy } from './engine.js';
import { poolKey } from '../snapshot/pool-id.js';
import { SMALL_SEGMENT, SMALL_SIZE } from './sizes.js';

export interface StartBlock {
  address: number;
  /** The block's size (rounded; see the note above for blocks freed during the history). */
  size: number;
  requested: number;
  /** Freed during the history, so sized from its request rather than the final state. */
  fromRequest: boolean;
}

export interface StartSegment {
  address: number;
  size: number;
  stream: number;
  /** n of the MemPool id (0, n); 0: the default pools. */
  pool: number;
  small: boolean;
  /** Live when the history began, in address order. */
  live: StartBlock[];
}

export interface StartLayout {
  segments: StartSegment[];
  /** Live allocations that lie in no known start segment (left to be allocated normally). */
  unplaced: number[];
  /** Live blocks whose size came from their request (freed during the history). */
  sizedFromRequest: number;
}

/** The segments present when the history began, each with its live blocks. */
export function startLayout(s: Snapshot, device: number, initialLive: Map<number, LiveAllocation>, settings: string): StartLayout {
  const trace = s.device_traces[device] ?? [];
  const created = new Set<number>();
  const found = new Map<number, StartSegment>();
  for (const e of trace) {
    if (e.action === 'segment_alloc') created.add(e.addr!);
    else if (e.action === 'segment_free' && !created.has(e.addr!) && !found.has(e.addr!)) {
      found.set(e.addr!, { address: e.addr!, size: e.size, stream: e.stream, pool: poolKey(e.pool_id), small: e.size === SMALL_SEGMENT, live: [] });
    }
  }
  for (const seg of s.segments) {
    if (seg.device !== device || seg.is_expandable || created.has(seg.address) || found.has(seg.address)) continue;
    found.set(seg.address, {
      address: seg.address, size: seg.total_size, stream: seg.stream, pool: poolKey(seg.segment_pool_id),
      small: seg.segment_type === 'small', live: [],
    });
  }
  const segments = [...found.values()].sort((a, b) => a.address - b.address);
  const unplaced: number[] = [];
  let sizedFromRequest = 0;
  const maxSplit = settingsDict(settings).max_split_size as number;  // -1: unlimited
  const rounded = new Map<number, number>();
  const roundSize = (n: number) => {
    let r = rounded.get(n);
    if (r === undefined) rounded.set(n, (r = sizePolicy(settings, n).rounded));
    return r;
  };
  for (const addr of [...initialLive.keys()].sort((a, b) => a - b)) {
    const seg = rangeHolding(segments, addr);
    if (!seg) {
      unplaced.push(addr);
      continue;
    }
    const l = initialLive.get(addr)!;
    seg.live.push({ address: addr, size: l.blockSize ?? roundSize(l.size), requested: l.size, fromRequest: l.blockSize === undefined });
  }
  for (const seg of segments) {
    const live = seg.live;
    for (let k = 0; k < live.length; k++) {
      const b = live[k]!;
      if (!b.fromRequest) continue;
      sizedFromRequest++;
      // Up to the next known block at most, and all the way to it when not split off.
      const room = (k + 1 < live.length ? live[k + 1]!.address : seg.address + seg.size) - b.address;
      const unsplit = !seg.small && (room - b.size <= SMALL_SIZE || (maxSplit > 0 && b.size >= maxSplit));
      if (b.size >= room || unsplit) b.size = room;
    }
    // A recording that disagrees with itself (overlapping blocks): each ends where the next begins.
    for (let k = 0; k + 1 < live.length; k++) {
      if (live[k]!.address + live[k]!.size > live[k + 1]!.address) live[k]!.size = live[k + 1]!.address - live[k]!.address;
    }
  }
  return { segments, unplaced, sizedFromRequest };
}

/**
 * A ring that wrapped can begin inside a request: its first entry is an alloc whose
 * segment_alloc was the last entry lost. Read naively, that segment was there and free at the
 * start and the alloc reused it. Returned when the first entry is an alloc at the base of a
 * start segment that holds nothing and has the size a segment made for that request would
 * have: the replay places it, asks its allocator which block that request would take, and
 * if not this segment's, the policy rules the reuse out (a request under max_split_size never
 * takes an oversize block; best fit may prefer another): the segment_alloc was lost, and the
 * segment is given back and counted as made by the first entry (see lostSegmentAlloc).
 */
export function firstAllocSegment(s: Snapshot, device: number, layout: StartLayout, settings: string): StartSegment | null {
  const first = (s.device_traces[device] ?? [])[0];
  if (first?.action !== 'alloc' || first.addr === undefined) return null;
  const seg = layout.segments.find((g) => g.address === first.addr);
  if (!seg || seg.live.length > 0 || seg.size !== sizePolicy(settings, first.size).segment) return null;
  return seg;
}

/** The segment_alloc entry a ring lost just before its first entry (see firstAllocSegment). */
export function lostSegmentAlloc(seg: StartSegment, first: TraceEntry): TraceEntry {
  return {
    action: 'segment_alloc', addr: seg.address, size: seg.size, stream: first.stream, time_us: first.time_us,
    compile_context: first.compile_context, user_metadata: '', pool_id: first.pool_id,
  };
}

/** The segment's live blocks as placeSegment takes them: (offset, size, requested) each. */
export function placementOf(seg: StartSegment): Float64Array {
  const out = new Float64Array(seg.live.length * 3);
  seg.live.forEach((b, k) => {
    out[3 * k] = b.address - seg.address;
    out[3 * k + 1] = b.size;
    out[3 * k + 2] = Math.min(b.requested, b.size);
  });
  return out;
}
