// Memory over the recorded history, event by event: the one engine behind the viewer's
// timeline and replay's recorded side, so every tool sums the same way.
//
// "Allocated" is what live allocations asked for (the trace's sizes, as memory_viz draws
// it); memory is live from its `alloc` until its `free_completed` (until `free_requested`
// when the history skipped completions). "Reserved" follows the segment events. A history
// that began on a warm cache starts from the state inferred from the final snapshot.
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { deviceArg, snapshotArg } from './args.js';
import { poolKey } from '../snapshot/pool-id.js';

export interface LiveAllocation {
  size: number;
  stream: number;
  /** n of the MemPool id (0, n) it was allocated from; 0: the default pools. */
  pool: number;
  /** The block's size, where the final state shows it (live from before the history to its end). */
  blockSize?: number;
}

/** The allocations live when the history began, by address. */
export function inferInitialLive(snapshot: Snapshot, device = 0): Map<number, LiveAllocation> {
  const s = snapshotArg(snapshot);
  device = deviceArg(device);
  const reading = new InitialLive();
  for (const e of s.device_traces[device] ?? []) reading.note(e);
  return reading.finish(s, device);
}

/**
 * inferInitialLive's reading, an entry at a time, for a caller that passes over the trace
 * anyway: a free with no alloc of its address before it frees a block live at the start (a
 * ring that wrapped between a free's request and its completion keeps the completion only);
 * then the final state's live blocks that no alloc of the history made.
 */
export class InitialLive {
  readonly initial = new Map<number, LiveAllocation>();
  readonly #allocated = new Set<number>();

  /** Reads one entry; true when it freed an allocation live at the start (its first free). */
  note(e: TraceEntry): boolean {
    if (e.addr === undefined) return false;
    if (e.action === 'alloc') {
      this.#allocated.add(e.addr);
    } else if ((e.action === 'free_requested' || e.action === 'free_completed') && !this.#allocated.has(e.addr) && !this.initial.has(e.addr)) {
      this.initial.set(e.addr, { size: e.size, stream: e.stream, pool: poolKey(e.pool_id) });
      return true;
    }
    return false;
  }

  /** After the last entry: adds the final state's live blocks no alloc made. */
  finish(s: Snapshot, device: number): Map<number, LiveAllocation> {
    for (const seg of s.segments) {
      if (seg.device !== device) continue;
      for (const b of seg.blocks) {
        if (b.state !== 'inactive' && !this.#allocated.has(b.address) && !this.initial.has(b.address)) {
          this.initial.set(b.address, {
            size: b.requested_size > 0 ? b.requested_size : b.size, stream: seg.stream, pool: poolKey(seg.segment_pool_id), blockSize: b.size,
          });
        }
      }
    }
    return this.initial;
  }
}

/** How a trace entry changes reserved memory. */
export function segmentDelta(e: TraceEntry): number {
  switch (e.action) {
    case 'segment_alloc':
    case 'segment_map':
      return e.size;
    case 'segment_free':
    case 'segment_unmap':
      return -e.size;
    default:
      return 0;
  }
}

/** Reserved bytes when the history began: the final segments less the recorded growth. */
export function reservedAtStart(snapshot: Snapshot, device = 0): number {
  const s = snapshotArg(snapshot);
  device = deviceArg(device);
  let growth = 0;
  for (const e of s.device_traces[device] ?? []) growth += segmentDelta(e);
  return reservedAtStartOf(s, device, growth);
}

/** reservedAtStart for a caller that summed the trace's growth itself. */
export function reservedAtStartOf(s: Snapshot, device: number, growth: number): number {
  let end = 0;
  for (const seg of s.segments) if (seg.device === device) end += seg.total_size;
  // Snapshots list only mapped ranges of expandable segments, so this holds for them too.
  return end - growth;
}

/** The action after which memory of a freed allocation can be reused. */
export function releasingAction(trace: readonly TraceEntry[]): 'free_completed' | 'free_requested' {
  return trace.some((e) => e.action === 'free_completed') ? 'free_completed' : 'free_requested';
}

export interface Timeline {
  device: number;
  /** Allocated bytes after each event. */
  allocated: Float64Array;
  /** Reserved bytes after each event. */
  reserved: Float64Array;
  allocatedAtStart: number;
  reservedAtStart: number;
  initialLive: Map<number, LiveAllocation>;
}

export function timeline(snapshot: Snapshot, device = 0): Timeline {
  const s = snapshotArg(snapshot);
  device = deviceArg(device);
  const trace: TraceEntry[] = s.device_traces[device] ?? [];
  const initialLive = inferInitialLive(s, device);
  const live = new Map<number, number>();
  let allocated = 0;
  for (const [addr, l] of initialLive) {
    live.set(addr, l.size);
    allocated += l.size;
  }
  const allocatedAtStart = allocated;
  let reserved = reservedAtStart(s, device);
  const start = reserved;
  const release = releasingAction(trace);
  const a = new Float64Array(trace.length);
  const r = new Float64Array(trace.length);
  for (let i = 0; i < trace.length; i++) {
    const e = trace[i]!;
    reserved += segmentDelta(e);
    if (e.addr !== undefined) {
      if (e.action === 'alloc') {
        allocated += e.size - (live.get(e.addr) ?? 0);  // an address handed out twice: the ring lost the free
        live.set(e.addr, e.size);
      } else if (e.action === release) {
        allocated -= live.get(e.addr) ?? 0;
        live.delete(e.addr);
      }
    }
    a[i] = allocated;
    r[i] = reserved;
  }
  return { device, allocated: a, reserved: r, allocatedAtStart, reservedAtStart: start, initialLive };
}
