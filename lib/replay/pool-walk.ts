// The walk of a trace that pools.ts reads private pools from: every segment instance the
// trace shows (with what lies in it as it goes), and every release of cached segments, each
// with the segments it released and those wholly free that survived it. Rules 2 and 4 of
// Note [Private pools read from a trace that names none] (pools.ts) are read here, where the
// state they need exists: which runs an OOM makes certain, and which segments a request
// shows apart.
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { inferInitialLive, releasingAction, segmentDelta } from '../analysis/timeline.js';
import { rangeHolding } from '../analysis/ranges.js';
import { startsCacheRelease } from './reading.js';
import { SMALL_SEGMENT, SMALL_SIZE } from './sizes.js';

/** One segment's life: from its segment_alloc (or the trace's start) to its segment_free. */
export interface Instance {
  address: number;
  size: number;
  stream: number;
  /** Allocations live in it. */
  live: number;
  /** Its live allocations: address -> rounded size (largestFree reads its free gaps). */
  blocks: Map<number, number>;
  /** largestFree's answer while `blocks` is unchanged; -1: to compute. */
  largest: number;
  /** The segments a request showed not in its pool, or it not in theirs (rule 4). */
  apart: Set<Instance>;
  known: 'private' | 'default' | null;
  /** The pool id of the final snapshot, when it is still there. */
  finalPool: number;
  index: number;
}

/** A run of segment frees (or an OOM that released nothing). */
export interface Release {
  /** Its first segment free (or the OOM entry), and the entry after its last. */
  at: number;
  end: number;
  released: Instance[];
  survivors: Instance[];
  /** An OOM's release: certainly the default pools'. */
  certain: boolean;
}

export interface SegmentWalk {
  trace: TraceEntry[];
  instances: Instance[];
  releases: Release[];
  /** Per entry: the segment an alloc landed in, and a segment event's segment. */
  allocIn: (Instance | undefined)[];
  segmentOf: (Instance | undefined)[];
  /** The segments open at the end by address: the final snapshot's are among them. */
  open: Map<number, Instance>;
  /** Whether the cache is released in one call, in order (reading.ts's releasesInOrder). */
  inOrder: boolean;
  /** Whether the entry before `at` freed memory inside one of `segments`. */
  freedInside(at: number, segments: Instance[]): boolean;
}

/** Partly free segments a request that made a segment is read apart from, at most (rule 4). */
export const APART_PARTLY_FREE = 16;

export function newInstance(instances: Instance[], address: number, size: number, stream: number): Instance {
  const inst: Instance = { address, size, stream, live: 0, blocks: new Map(), largest: -1, apart: new Set(), known: null, finalPool: 0, index: instances.length };
  instances.push(inst);
  return inst;
}

/**
 * The largest free block a segment surely holds: its longest gap between live allocations,
 * less, in a large segment, the 1 MiB or less a block keeps unsplit past its rounded size.
 */
export function largestFree(g: Instance): number {
  if (g.largest >= 0) return g.largest;
  const slack = g.size === SMALL_SEGMENT ? 0 : SMALL_SIZE;
  let best = 0;
  let from = g.address;
  for (const [addr, size] of [...g.blocks].sort((a, b) => a[0] - b[0])) {
    best = Math.max(best, addr - from);
    from = addr + size + slack;
  }
  return (g.largest = Math.max(best, g.address + g.size - from));
}

/**
 * Rule 4: a request of `rounded` bytes on `stream` made the segment `made` while the segments
 * in `open` on its stream and of its request's pool kind held a free block that would have
 * served it: every wholly free one, and the latest made of those partly free (the pairs grow
 * with the square of the segments, and two pools read as one were made close in time), are
 * apart from it.
 */
export function readApart(made: Instance, rounded: number, stream: number, open: Iterable<Instance>): void {
  const partly: Instance[] = [];
  for (const w of open) {
    if (w.stream !== stream || (rounded <= SMALL_SIZE) !== (w.size === SMALL_SEGMENT) || largestFree(w) < rounded) continue;
    if (w.live === 0) {
      made.apart.add(w);
      w.apart.add(made);
    } else {
      partly.push(w);
    }
  }
  for (const w of partly.slice(-APART_PARTLY_FREE)) {
    made.apart.add(w);
    w.apart.add(made);
  }
}

/**
 * Rule 2: the releases a run of segment frees ending at `i` makes. Before an OOM it is the
 * default pools' (certain), unless the entry before the run freed memory inside it: then
 * the run may be a pool that ended just before, left open, and the OOM's own release
 * (certain) follows it, having released nothing.
 */
export function closeRun(trace: TraceEntry[], i: number, run: Release, freedBefore: boolean): Release[] {
  if (trace[i]?.action !== 'oom') return [run];
  if (!freedBefore) return [{ ...run, certain: true }];
  return [run, { at: i, end: i + 1, released: [], survivors: run.survivors, certain: true }];
}

/** The segments present when the trace began, by address (those it frees without making
 *  them, and the final snapshot's it did not make). */
function startInstances(trace: TraceEntry[], s: Snapshot, device: number, instances: Instance[]): Map<number, Instance> {
  const open = new Map<number, Instance>();
  const created = new Set<number>();
  for (const e of trace) if (e.action === 'segment_alloc') created.add(e.addr!);
  const freedFirst = new Set<number>();
  for (const e of trace) {
    if (e.action === 'segment_free' && !created.has(e.addr!) && !freedFirst.has(e.addr!)) {
      freedFirst.add(e.addr!);
      open.set(e.addr!, newInstance(instances, e.addr!, e.size, e.stream));
    }
  }
  for (const g of s.segments) {
    if (g.device === device && !created.has(g.address) && !open.has(g.address)) open.set(g.address, newInstance(instances, g.address, g.total_size, g.stream));
  }
  return open;
}

/** The trace walked once: its segments, what lies in them, and its releases. */
export function walkSegments(s: Snapshot, device: number, rounded: (n: number) => number, inOrder: boolean): SegmentWalk {
  const trace = s.device_traces[device] ?? [];
  const instances: Instance[] = [];
  const open = startInstances(trace, s, device, instances);
  const sorted = [...open.values()].sort((a, b) => a.address - b.address);
  const place = (g: Instance, addr: number, size: number) => {
    g.live++;
    g.blocks.set(addr, size);
    g.largest = -1;
  };
  const owner = new Map<number, Instance>();  // live allocation address -> its segment
  for (const [addr, a] of inferInitialLive(s, device)) {
    const g = rangeHolding(sorted, addr);
    if (g) {
      place(g, addr, a.blockSize ?? rounded(a.size));
      owner.set(addr, g);
    }
  }
  const unplace = (g: Instance, addr: number) => {
    g.live--;
    g.blocks.delete(addr);
    g.largest = -1;
  };
  const release = releasingAction(trace);
  const freedInside = (at: number, segments: Instance[]): boolean => {
    const before = trace[at - 1];
    if (before?.action !== release || before.addr === undefined) return false;
    return segments.some((g) => before.addr! >= g.address && before.addr! < g.address + g.size);
  };
  const freeNow = (except: Instance[]) => [...open.values()].filter((g) => g.live === 0 && !except.includes(g));
  const walk: SegmentWalk = {
    trace, instances, releases: [], allocIn: new Array(trace.length), segmentOf: new Array(trace.length), open, inOrder, freedInside,
  };
  let run: Instance[] | null = null;
  let runAt = -1;
  for (let i = 0; i < trace.length; i++) {
    const e = trace[i]!;
    if (run && (segmentDelta(e) >= 0 || startsCacheRelease(trace, i, inOrder))) {
      const r: Release = { at: runAt, end: i, released: run, survivors: freeNow(run), certain: false };
      walk.releases.push(...closeRun(trace, i, r, e.action === 'oom' && freedInside(runAt, run)));
      run = null;
    } else if (e.action === 'oom') {
      walk.releases.push({ at: i, end: i + 1, released: [], survivors: freeNow([]), certain: true });
    }
    if (e.action === 'segment_alloc') {
      const g = newInstance(instances, e.addr!, e.size, e.stream);
      const next = trace[i + 1];
      if (inOrder && next?.action === 'alloc' && next.addr === e.addr) readApart(g, rounded(next.size), e.stream, open.values());
      open.set(e.addr!, g);
      walk.segmentOf[i] = g;
      let at = sorted.length;
      while (at > 0 && sorted[at - 1]!.address > g.address) at--;
      sorted.splice(at, 0, g);
    } else if (e.action === 'segment_free') {
      const g = open.get(e.addr!);
      if (!g) continue;
      walk.segmentOf[i] = g;
      open.delete(e.addr!);
      sorted.splice(sorted.indexOf(g), 1);
      if (!run) {
        run = [];
        runAt = i;
      }
      run.push(g);
    } else if (e.action === 'alloc' && e.addr !== undefined) {
      const was = owner.get(e.addr);
      if (was) unplace(was, e.addr);  // the ring lost its free
      const g = rangeHolding(sorted, e.addr);
      walk.allocIn[i] = g;
      if (g) {
        place(g, e.addr, rounded(e.size));
        owner.set(e.addr, g);
      }
    } else if (e.action === release && e.addr !== undefined) {
      const g = owner.get(e.addr);
      if (g) {
        unplace(g, e.addr);
        owner.delete(e.addr);
      }
    }
  }
  if (run) walk.releases.push({ at: runAt, end: trace.length, released: run, survivors: freeNow(run), certain: false });
  return walk;
}
