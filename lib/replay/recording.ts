// The recorded side of a replay, read once: everything about the history that does not
// depend on the settings being tried. A replay under each setting (and what-if's workers,
// through recording-transfer.ts) reads it and derives nothing again.
//
// Allocations are numbered by slot so the replay's loop needs no map: an alloc entry's slot
// is its own index; an allocation live when the history began gets trace.length + its rank
// by address; the last slot is scratch. Which slot each free releases is decided here, by
// following addresses through the trace once (a free of an address the history never
// allocated and the start does not explain releases none).
import type { Segment, Snapshot, TraceEntry } from '../snapshot/types.js';
import { InitialLive, releasingAction, reservedAtStartOf, segmentDelta, type LiveAllocation } from '../analysis/timeline.js';
import { recordedCapacity, settingsOf } from './reading.js';
import { inferPrivatePools, type InferredPools } from './pools.js';
import { firstAllocSegment, startLayout, type StartLayout } from './start-layout.js';
import { poolKey } from '../snapshot/pool-id.js';

export interface Recording {
  device: number;
  /** The device's trace; where the file names no pool, with the pool reading's ids. */
  trace: readonly TraceEntry[];
  /** The device's final segments. */
  segments: readonly Segment[];
  allocatorSettings: Record<string, unknown> | undefined;
  /** The recorded settings as a config string ('' for the defaults). */
  settings: string;
  /** The recorded device's total memory, where an OOM entry tells it. */
  capacity: number | undefined;
  freeAt: 'free_completed' | 'free_requested';
  /** Reserved bytes after each entry, and before the first. */
  reserved: Float64Array;
  reservedAtStart: number;
  /** The allocations live when the history began, by address, and each one's slot. */
  initial: Map<number, LiveAllocation>;
  initialSlot: Map<number, number>;
  /** The start's segments as recorded (under the recorded settings; expandable segments
   *  are not placed), and the start segment the first entry may have made (start-layout.ts). */
  start: StartLayout;
  firstSegment: number;
  /** Per entry: for an alloc, its slot; for a free (freeAt), the slot it releases; else -1. */
  slot: Int32Array;
  /** Per alloc whose address was still live (the ring lost the free between): that slot; else -1. */
  reuses: Int32Array;
  slots: number;
  /** Recorded stream ids, sorted, the default stream left out. */
  streams: number[];
  /** Per private pool, its last alloc entry (a run of its segment frees after it is its end). */
  lastPoolAlloc: Map<number, number>;
  /** The pool reading of a trace that names no pool (pools.ts), and the runs read as a
   *  pool's end (true) or an empty_cache() (false) by choice; null: the trace names its pools. */
  inferred: { pools: number; allocs: number; open: InferredPools['open']; ooms: InferredPools['ooms'] } | null;
  forced: [number, boolean][];
}

/** Reads device `device` of a snapshot; `forced` decides open runs of the pool reading. */
export function readRecording(s: Snapshot, device: number, forced: ReadonlyMap<number, boolean> = new Map()): Recording {
  const pools = inferPrivatePools(s, device, forced);
  if (pools) s = { ...s, device_traces: s.device_traces.map((t, d) => (d === device ? pools.trace : t)) };
  const trace = s.device_traces[device] ?? [];
  const settings = settingsOf(s);
  const freeAt = releasingAction(trace);
  const n = trace.length;
  // One pass: reserved memory (timeline.ts's rule), the start's live allocations (its
  // InitialLive), and which slot each free releases. A start allocation's slot is known only
  // once all are found (by address rank): until then it is -(k + 2), k its order of discovery.
  const initialLive = new InitialLive();
  const found: number[] = [];
  const slot = new Int32Array(n).fill(-1);
  const reuses = new Int32Array(n).fill(-1);
  const reserved = new Float64Array(n);
  const liveAt = new Map<number, number>();
  const lastPoolAlloc = new Map<number, number>();
  const streams = new Set<number>();
  let growth = 0;
  for (let i = 0; i < n; i++) {
    const e = trace[i]!;
    growth += segmentDelta(e);
    reserved[i] = growth;
    if (e.stream !== 0) streams.add(e.stream);
    if (e.addr === undefined) continue;
    if (initialLive.note(e)) {
      const provisional = -(found.push(e.addr) + 1);
      if (e.action === freeAt) slot[i] = provisional;
      else liveAt.set(e.addr, provisional);  // its free_completed comes later
    } else if (e.action === 'alloc') {
      reuses[i] = liveAt.get(e.addr) ?? -1;
      liveAt.set(e.addr, i);
      slot[i] = i;
      const pool = poolKey(e.pool_id);
      if (pool !== 0) lastPoolAlloc.set(pool, i);
    } else if (e.action === freeAt) {
      slot[i] = liveAt.get(e.addr) ?? -1;
      liveAt.delete(e.addr);
    }
  }
  const reservedAtStart = reservedAtStartOf(s, device, growth);
  for (let i = 0; i < n; i++) reserved[i]! += reservedAtStart;
  const initial = initialLive.finish(s, device);
  const initialSlot = new Map<number, number>();
  [...initial.keys()].sort((a, b) => a - b).forEach((addr, k) => initialSlot.set(addr, n + k));
  const settle = (a: Int32Array) => {
    for (let i = 0; i < n; i++) if (a[i]! < -1) a[i] = initialSlot.get(found[-a[i]! - 2]!)!;
  };
  settle(slot);
  settle(reuses);
  const segments = s.segments.filter((g) => g.device === device);
  for (const g of segments) if (g.stream !== 0) streams.add(g.stream);
  const start = startLayout(s, device, initial, settings);
  const first = firstAllocSegment(s, device, start, settings);
  return {
    device, trace, segments, allocatorSettings: s.allocator_settings, settings,
    capacity: recordedCapacity(trace, reserved), freeAt, reserved, reservedAtStart, initial, initialSlot,
    start, firstSegment: first ? start.segments.indexOf(first) : -1,
    slot, reuses, slots: n + initialSlot.size + 1, streams: [...streams].sort((a, b) => a - b), lastPoolAlloc,
    inferred: pools ? { pools: pools.pools, allocs: pools.allocs, open: pools.open, ooms: pools.ooms } : null,
    forced: [...forced],
  };
}

/** The snapshot a recording was read from, as the pool reading takes it (its inferred ids dropped). */
export function sourceOf(r: Recording): Snapshot {
  const trace = r.trace.map((e) => {
    if (!r.inferred || e.pool_id === undefined) return e;
    const copy = { ...e };
    delete copy.pool_id;
    return copy;
  });
  const device_traces: TraceEntry[][] = Array.from({ length: r.device + 1 }, () => []);
  device_traces[r.device] = trace;
  const snap: Snapshot = { segments: [...r.segments], device_traces };
  if (r.allocatorSettings !== undefined) snap.allocator_settings = r.allocatorSettings;
  return snap;
}
