// Memory per private pool (MemPools, graph pools) over the recorded history: what the
// viewer's "incl. private pools" view draws, as memory_viz's "Allocated Memory (incl.
// Private Pools)" does. Each pool is an envelope of the memory it reserved (its segment
// events) with its live allocations inside; the default pools are the rest of `timeline`.
//
// Which pool an entry belongs to: its `pool_id` where the file writes one (ours always do;
// PyTorch 2.11's trace entries carry none). Otherwise the address is looked up in the final
// segments of private pools, from the last `segment_alloc` that made such a segment on: a
// pool released before the dump leaves nothing to read, and its memory counts as the
// default pools' (issue 26 infers those for replay).
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { deviceArg, snapshotArg } from './args.js';
import { inferInitialLive, releasingAction, segmentDelta } from './timeline.js';
import { rangeHolding } from './ranges.js';

export interface PoolSeries {
  /** The pool's id as the file writes it: (0, n) for a MemPool, (n, 0) for a graph's pool. */
  id: [number, number];
  /** The events that changed this pool's memory, ascending; the two arrays below hold its
   *  memory after each of them. */
  at: Int32Array;
  allocated: Float64Array;
  reserved: Float64Array;
  allocatedAtStart: number;
  reservedAtStart: number;
  peakReserved: number;
}

export interface PoolTimeline {
  device: number;
  /** Index into `pools` of each event's pool; -1: the default pools (or no address). */
  poolOf: Int32Array;
  pools: PoolSeries[];
}

const isPrivate = (id: number[] | undefined): id is number[] =>
  Array.isArray(id) && id.length === 2 && (id[0] !== 0 || id[1] !== 0);
const keyOf = (id: number[]): string => `${id[0]},${id[1]}`;

interface FinalSegment {
  address: number;
  size: number;
  key: string;
  /** The event that made it (its last segment_alloc), or -1: it existed when the history began. */
  bornAt: number;
}

/** The private segment of the final snapshot that holds `addr` at event `i`, if any. */
function finalSegmentAt(segs: FinalSegment[], addr: number, i: number): FinalSegment | undefined {
  const s = rangeHolding(segs, addr);
  return s && i >= s.bornAt ? s : undefined;
}

export function poolTimeline(snapshot: Snapshot, device = 0): PoolTimeline {
  const s = snapshotArg(snapshot);
  device = deviceArg(device);
  const trace: TraceEntry[] = s.device_traces[device] ?? [];
  const index = new Map<string, number>();
  const ids: [number, number][] = [];
  const poolIndex = (id: number[]): number => {
    const k = keyOf(id);
    let p = index.get(k);
    if (p === undefined) {
      p = ids.length;
      index.set(k, p);
      ids.push([id[0]!, id[1]!]);
    }
    return p;
  };

  const finalSegs: FinalSegment[] = [];
  const endReserved: number[] = [];
  for (const g of s.segments) {
    if (g.device !== device || !isPrivate(g.segment_pool_id)) continue;
    const p = poolIndex(g.segment_pool_id);
    endReserved[p] = (endReserved[p] ?? 0) + g.total_size;
    finalSegs.push({ address: g.address, size: g.total_size, key: keyOf(g.segment_pool_id), bornAt: -1 });
  }
  finalSegs.sort((a, b) => a.address - b.address);
  const byStart = new Map(finalSegs.map((g) => [g.address, g]));
  trace.forEach((e, i) => {
    if (e.action === 'segment_alloc' && e.addr !== undefined) {
      const g = byStart.get(e.addr);
      if (g) g.bornAt = i;
    }
  });

  const n = trace.length;
  const poolOf = new Int32Array(n).fill(-1);
  const anyEntryPool = trace.some((e) => isPrivate(e.pool_id));
  if (!anyEntryPool && finalSegs.length === 0) return { device, poolOf, pools: [] };
  for (let i = 0; i < n; i++) {
    const e = trace[i]!;
    if (isPrivate(e.pool_id)) {
      poolOf[i] = poolIndex(e.pool_id);
    } else if (!anyEntryPool && e.addr !== undefined && e.action !== 'oom') {
      const g = finalSegmentAt(finalSegs, e.addr, i);
      if (g) poolOf[i] = index.get(g.key)!;
    }
  }

  // Replayed as `timeline` replays the whole device, kept per pool.
  const count = ids.length;
  const allocated = new Float64Array(count);
  const reserved = new Float64Array(count);
  const live = new Map<number, [number, number]>();  // address -> [size, pool]
  const initial = inferInitialLive(s, device);
  // An allocation live from the start is in the pool of the first entry at its address (its
  // free), or of the final segment that holds it.
  const firstAt = new Map<number, number>();
  for (let i = n - 1; i >= 0; i--) if (trace[i]!.addr !== undefined && initial.has(trace[i]!.addr!)) firstAt.set(trace[i]!.addr!, i);
  for (const [addr, l] of initial) {
    const first = firstAt.get(addr);
    const g = first === undefined ? finalSegmentAt(finalSegs, addr, -1) : undefined;
    const p = first !== undefined ? poolOf[first]! : g ? index.get(g.key)! : -1;
    live.set(addr, [l.size, p]);
    if (p >= 0) allocated[p] += l.size;
  }
  const growth = new Float64Array(count);
  for (let i = 0; i < n; i++) if (poolOf[i]! >= 0) growth[poolOf[i]!] += segmentDelta(trace[i]!);
  for (let p = 0; p < count; p++) reserved[p] = (endReserved[p] ?? 0) - growth[p]!;

  const series = ids.map((id, p) => ({
    id, at: [] as number[], allocated: [] as number[], reserved: [] as number[],
    allocatedAtStart: allocated[p]!, reservedAtStart: reserved[p]!, peakReserved: reserved[p]!,
  }));
  const release = releasingAction(trace);
  const changed = (p: number, i: number) => {
    const o = series[p]!;
    o.at.push(i);
    o.allocated.push(allocated[p]!);
    o.reserved.push(reserved[p]!);
    o.peakReserved = Math.max(o.peakReserved, reserved[p]!);
  };
  for (let i = 0; i < n; i++) {
    const e = trace[i]!;
    const delta = segmentDelta(e);
    if (delta !== 0 && poolOf[i]! >= 0) {
      reserved[poolOf[i]!] += delta;
      changed(poolOf[i]!, i);
    }
    if (e.addr === undefined) continue;
    if (e.action === 'alloc') {
      const was = live.get(e.addr);  // an address handed out twice: the ring lost the free
      if (was && was[1] >= 0) {
        allocated[was[1]] -= was[0];
        changed(was[1], i);
      }
      live.set(e.addr, [e.size, poolOf[i]!]);
      if (poolOf[i]! >= 0) {
        allocated[poolOf[i]!] += e.size;
        changed(poolOf[i]!, i);
      }
    } else if (e.action === release) {
      const was = live.get(e.addr);
      live.delete(e.addr);
      if (was && was[1] >= 0) {
        allocated[was[1]] -= was[0];
        changed(was[1], i);
      }
    }
  }
  return {
    device,
    poolOf,
    pools: series.map((o) => ({
      ...o, at: Int32Array.from(o.at), allocated: Float64Array.from(o.allocated), reserved: Float64Array.from(o.reserved),
    })),
  };
}
