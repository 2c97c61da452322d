// The six rules of Note [Private pools read from a trace that names none]
// (lib/replay/pools.ts), each on a trace small enough to read by eye. The whole reading is
// held by test/tools/replay-pools.test.ts (300 generated histories and PyTorch's file, exact).
import { describe, expect, it } from 'vitest';
import type { Segment, Snapshot, TraceEntry } from '../../lib/snapshot/types.js';
import { knownFromFinal } from '../../lib/replay/pools.js';
import {
  APART_PARTLY_FREE, closeRun, largestFree, newInstance, readApart, walkSegments, type Instance, type Release, type SegmentWalk,
} from '../../lib/replay/pool-walk.js';
import { likelierPoolEnd, readReleases, runReading } from '../../lib/replay/pool-releases.js';
import { groupPools } from '../../lib/replay/pool-groups.js';
import { readOomPools } from '../../lib/replay/pool-ooms.js';

const MiB = 2 ** 20;
const BASE = 0x7f0000000000;

function entry(action: TraceEntry['action'], addr: number | undefined, size: number, stream = 0, pool?: number): TraceEntry {
  const e: TraceEntry = { action, size, stream, time_us: 0, compile_context: 'N/A', user_metadata: '' };
  if (addr !== undefined) e.addr = addr;
  if (pool !== undefined) e.pool_id = [0, pool];
  return e;
}

function snapshot(trace: TraceEntry[], segments: Segment[] = []): Snapshot {
  return { segments, device_traces: [trace] } as Snapshot;
}

function segment(address: number, size: number, pool: number): Segment {
  return {
    device: 0, address, total_size: size, allocated_size: 0, active_size: 0, requested_size: 0, stream: 0,
    segment_type: size === 2 * MiB ? 'small' : 'large', segment_pool_id: [0, pool], is_expandable: false, frames: [], blocks: [],
  } as unknown as Segment;
}

const roundTo512 = (n: number) => Math.ceil(n / 512) * 512;
const seg = (n: number) => BASE + n * 64 * MiB;

/** A 20 MiB segment made and its block allocated, at segment slot n. */
const make = (n: number, size = 4 * MiB, stream = 0) => [entry('segment_alloc', seg(n), 20 * MiB, stream), entry('alloc', seg(n), size, stream)];

describe('rule 1: the final snapshot\'s segments carry their pool', () => {
  it('marks the instance open at each final address, private with its id or default', () => {
    const instances: Instance[] = [];
    const a = newInstance(instances, seg(0), 20 * MiB, 0);
    const b = newInstance(instances, seg(1), 20 * MiB, 0);
    const gone = newInstance(instances, seg(2), 20 * MiB, 0);
    knownFromFinal([segment(seg(0), 20 * MiB, 3), segment(seg(1), 20 * MiB, 0)], new Map([[seg(0), a], [seg(1), b]]));
    expect([a.known, a.finalPool, b.known, b.finalPool, gone.known]).toEqual(['private', 3, 'default', 0, null]);
  });
});

describe('rule 2: an OOM follows a release of the default pools', () => {
  const run: Release = { at: 5, end: 7, released: [], survivors: [], certain: false };
  const trace = [...Array.from({ length: 7 }, () => entry('alloc', 0, 1)), entry('oom', undefined, MiB)];
  it('a run before an OOM is certain; one before anything else stays open', () => {
    expect(closeRun(trace, 7, run, false)).toEqual([{ ...run, certain: true }]);
    expect(closeRun(trace, 6, run, false)).toEqual([run]);
  });
  it('unless the entry before the run freed inside it: the run stays open and the OOM releases nothing, certainly', () => {
    expect(closeRun(trace, 7, run, true)).toEqual([run, { at: 7, end: 8, released: [], survivors: [], certain: true }]);
  });
  // Segment 0 (too full to have served segment 1's request, so not read apart from it by
  // rule 4) and segment 1 are emptied; the OOM's release takes segment 1 and leaves 0.
  const history = (between: TraceEntry[]) => [...make(0, 19 * MiB), ...make(1), entry('free_completed', seg(0), 19 * MiB),
    entry('free_completed', seg(1), 4 * MiB), ...between, entry('segment_free', seg(1), 20 * MiB), entry('oom', undefined, 100 * MiB)];
  it('the walk applies it: what the OOM\'s release took is default, a wholly free survivor private', () => {
    const walk = walkSegments(snapshot(history([entry('alloc', seg(9), 1)])), 0, roundTo512, true);
    expect(walk.releases.map((r) => [r.at, r.certain])).toEqual([[7, true]]);
    readReleases(walk, new Map());
    expect([walk.instances[0]!.address, walk.instances[0]!.known, walk.instances[1]!.known]).toEqual([seg(0), 'private', 'default']);
  });
  it('with a free inside the run just before it, the run is open and the survivor still private', () => {
    const walk = walkSegments(snapshot(history([])), 0, roundTo512, true);
    expect(walk.releases.map((r) => [r.at, r.certain, r.released.length])).toEqual([[6, false, 1], [7, true, 0]]);
    readReleases(walk, new Map());
    expect(walk.instances[0]!.known).toBe('private');
  });
});

describe('rule 3: other runs are an empty_cache() or a pool\'s end', () => {
  const instances: Instance[] = [];
  const [x, y] = [newInstance(instances, seg(0), 20 * MiB, 0), newInstance(instances, seg(1), 20 * MiB, 0)];
  const run = (released: Instance[], survivors: Instance[], certain = false): Release => ({ at: 1, end: 2, released, survivors, certain });
  it('read from what is known of the segments it released and those that survived it', () => {
    x.known = 'private';
    expect(runReading(run([x], []))).toBe('end');
    x.known = 'default';
    expect(runReading(run([x], []))).toBe('default');
    x.known = null;
    y.known = 'default';
    expect(runReading(run([x], [y]))).toBe('end');
    y.known = 'private';
    expect(runReading(run([x], [y]))).toBeNull();  // a private survivor tells nothing
    expect(runReading(run([], [], true))).toBe('default');
    x.known = 'private';
    y.known = 'default';
    expect(runReading(run([x, y], []))).toBeNull();  // contradictory: left alone
  });
  it('an open run is likelier a pool\'s end when a free inside it came just before, and only where a private pool was seen', () => {
    const t = [...make(0), entry('free_completed', seg(0), 4 * MiB), entry('segment_free', seg(0), 20 * MiB)];
    const walk = walkSegments(snapshot(t), 0, roundTo512, true);
    const r = walk.releases[0]!;
    expect(likelierPoolEnd(walk, r, true)).toBe(true);
    expect(likelierPoolEnd(walk, r, false)).toBe(false);
    // With no private pool shown anywhere, the run is read as an empty_cache().
    const reading = readReleases(walk, new Map());
    expect([...reading.open.values()]).toEqual([false]);
    expect(reading.poolEnds).toEqual([]);
    // `forced` gives it the other reading.
    const forced = readReleases(walkSegments(snapshot(t), 0, roundTo512, true), new Map([[r.at, true]]));
    expect(forced.poolEnds.map((ended) => ended.map((g) => g.address))).toEqual([[seg(0)]]);
  });
});

describe('rule 4: a request that made a segment past a free block that would serve it was not in that pool', () => {
  it('the largest free block a segment surely holds: gaps between live blocks, less 1 MiB after each in a large segment', () => {
    const instances: Instance[] = [];
    const g = newInstance(instances, 0, 20 * MiB, 0);
    g.blocks.set(2 * MiB, 4 * MiB);
    g.blocks.set(12 * MiB, 2 * MiB);
    expect(largestFree(g)).toBe(5 * MiB);  // 2+4+1 = 7 to 12
    const small = newInstance(instances, 0, 2 * MiB, 0);
    small.blocks.set(0, 512);
    expect(largestFree(small)).toBe(2 * MiB - 512);
  });
  it('pairs the new segment with every wholly free one that would serve, and the latest partly free ones', () => {
    const instances: Instance[] = [];
    const free = newInstance(instances, seg(0), 20 * MiB, 0);
    const otherStream = newInstance(instances, seg(1), 20 * MiB, 7);
    const tooSmall = newInstance(instances, seg(2), 20 * MiB, 0);
    tooSmall.blocks.set(seg(2), 18 * MiB);
    tooSmall.live = 1;
    const partly = Array.from({ length: APART_PARTLY_FREE + 2 }, (_, k) => {
      const g = newInstance(instances, seg(10 + k), 20 * MiB, 0);
      g.blocks.set(seg(10 + k), 2 * MiB);
      g.live = 1;
      return g;
    });
    const made = newInstance(instances, seg(100), 20 * MiB, 0);
    readApart(made, 4 * MiB, 0, [free, otherStream, tooSmall, ...partly]);
    expect(made.apart.has(free) && free.apart.has(made)).toBe(true);
    expect(made.apart.has(otherStream) || made.apart.has(tooSmall)).toBe(false);
    expect(partly.filter((g) => made.apart.has(g))).toEqual(partly.slice(-APART_PARTLY_FREE));
  });
  it('its consequence: a segment apart from one known default is private', () => {
    const t = [...make(0), entry('free_completed', seg(0), 4 * MiB), ...make(1)];
    const walk = walkSegments(snapshot(t, [segment(seg(0), 20 * MiB, 0), segment(seg(1), 20 * MiB, 0)]), 0, roundTo512, true);
    const [a, b] = [walk.open.get(seg(0))!, walk.open.get(seg(1))!];
    expect(a.apart.has(b)).toBe(true);
    a.known = 'default';
    readReleases(walk, new Map());
    expect(b.known).toBe('private');
  });
});

describe('rule 5: private segments grouped into pools', () => {
  const walkOf = (trace: TraceEntry[], instances: Instance[], allocIn: (Instance | undefined)[]): SegmentWalk => ({
    trace, instances, releases: [], allocIn, segmentOf: [], open: new Map(), inOrder: true, freedInside: () => false,
  });
  it('back-to-back allocations in private segments make one pool; a default allocation between them splits it', () => {
    const instances: Instance[] = [];
    const [a, b, c, d] = [0, 1, 2, 3].map((n) => newInstance(instances, seg(n), 20 * MiB, 0));
    for (const g of [a, b, c]) g.known = 'private';
    d.known = 'default';
    const t = [0, 1, 2, 3].map((n) => entry('alloc', seg(n), MiB));
    // a, b back to back; d (default) between b and c.
    const groups = groupPools(walkOf(t, instances, [a, b, d, c]), [], []);
    const ids = [a, b, c, d].map((g) => groups.poolOf(g));
    expect(ids[0]).toBe(ids[1]);
    expect(ids[2]).not.toBe(ids[0]);
    expect(ids[3]).toBe(0);
    expect(groups.count()).toBe(2);
  });
  it('a pool\'s end groups what it released; the final id is kept; segments apart never join', () => {
    const instances: Instance[] = [];
    const [a, b, c, d] = [0, 1, 2, 3].map((n) => newInstance(instances, seg(n), 20 * MiB, 0));
    for (const g of [a, b, c, d]) g.known = 'private';
    c.finalPool = 4;
    c.apart.add(d);
    d.apart.add(c);
    const t = [entry('alloc', seg(2), MiB), entry('alloc', seg(3), MiB)];
    const groups = groupPools(walkOf(t, instances, [c, d]), [[a, b]], [segment(seg(2), 20 * MiB, 4)]);
    expect(groups.poolOf(c)).toBe(4);
    expect(groups.poolOf(a)).toBe(groups.poolOf(b));
    expect(groups.poolOf(d)).not.toBe(4);
    expect(new Set([groups.poolOf(a), groups.poolOf(d)]).size).toBe(2);
    expect(Math.min(groups.poolOf(a), groups.poolOf(d))).toBeGreaterThan(4);  // new ids after the final ones
  });
});

describe('rule 6: an OOM between a pool\'s allocations was the pool\'s (under max_split_size or a GC threshold)', () => {
  it('between two of one pool: in it; beside one on its stream: open, read as forced (default pools otherwise)', () => {
    const between = [entry('alloc', seg(0), MiB, 0, 2), entry('oom', undefined, MiB), entry('alloc', seg(0) + MiB, MiB, 0, 2)];
    expect(readOomPools(between, new Map())).toEqual([]);
    expect(between[1]!.pool_id).toEqual([0, 2]);
    const beside = () => [entry('alloc', seg(0), MiB, 0, 2), entry('oom', undefined, MiB, 0), entry('alloc', seg(1), MiB, 0)];
    const open = beside();
    expect(readOomPools(open, new Map())).toEqual([{ at: 1, inPool: false }]);
    expect(open[1]!.pool_id).toBeUndefined();
    const forced = beside();
    expect(readOomPools(forced, new Map([[1, true]]))).toEqual([{ at: 1, inPool: true }]);
    expect(forced[1]!.pool_id).toEqual([0, 2]);
  });
  it('a pool that ended before the OOM, or one on another stream, is not its pool', () => {
    const ended = [entry('alloc', seg(0), MiB, 0, 2), entry('segment_free', seg(0), 20 * MiB, 0, 2), entry('oom', undefined, MiB), entry('alloc', seg(1), MiB)];
    expect(readOomPools(ended, new Map())).toEqual([]);
    expect(ended[2]!.pool_id).toBeUndefined();
    const elsewhere = [entry('alloc', seg(0), MiB, 5, 2), entry('oom', undefined, MiB, 0), entry('alloc', seg(1), MiB, 0)];
    expect(readOomPools(elsewhere, new Map())).toEqual([]);
  });
});
