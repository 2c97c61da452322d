// Which allocations of a recording went to private pools (MemPools), for a file that does not
// say: PyTorch 2.11 writes no `pool_id` in trace entries, only `segment_pool_id` on the final
// segments, so a pool released before the dump leaves no mark of its own. Replaying such
// allocations in the default pools serves them from blocks the recorded ones could never
// see, and reads the pool's end as an empty_cache().
//
// What the recording does show is where the cache was released, and the policy says what a
// release of the default pools does: release_cached_blocks() frees every free segment of the
// default pools (after completing pending frees, which the trace shows as free_completed
// entries before it) and leaves live private pools alone. So:
//
//   1. A segment of the final snapshot carries its pool: private or default, for certain.
//   2. An out-of-memory entry follows a release of the default pools (the run of segment
//      frees just before it, if any). A segment that was wholly free then and survived it is
//      a private pool's. But when the entry before that run freed memory inside one of its
//      segments, the run may be a pool that ended just before the OOM (whose own release
//      then freed nothing): it is left open (3), and only the survivors are certain.
//   3. Any other run of segment frees is an empty_cache() (the default pools) or a pool's
//      end (MemPool destroyed: only its own segments go). With `released` the run's segments
//      and `survivors` those wholly free that stayed: if one released is known private or
//      one survivor known default, the run was a pool's end, and every segment it released
//      is that pool's; if one released is known default or one survivor known private, it
//      was the default pools', and every survivor is private. (A survivor known private
//      tells nothing: other pools live through both.) Read again until nothing changes;
//      then the latest run still open is given its likelier reading and the rest read again
//      (latest first: a default segment that survived an earlier pool's end is then seen
//      released by it). Likelier: a pool's end when the entry just before the run freed
//      memory inside one of the segments it releases (a MemPool ends when its last user lets
//      go, so its last tensor's free comes right before its segments go), else an
//      empty_cache(), which releases whatever is free whenever it was freed. On the first 40
//      generated mixes stripped of their pool ids (test/tools/replay-pools.test.ts) this
//      prior, with 2's exception below, took the exact replays from 30 to 37 (29 to 34 on
//      the next 40): open runs read as empty_cache() by default were pools' ends more often
//      than not. But where nothing else shows a private pool (no final segment of one, no
//      segment an OOM's release left), every open run is first read as an empty_cache(): a
//      program that empties the cache right after freeing, with no MemPool, would otherwise
//      be read as a pool per call. search.ts tries the other reading of each open run
//      against the recording.
//   5. A request that made a segment while a segment on its stream held a free block that
//      would have served it (of the small pool for a small request, the large for a large;
//      the free block read from the gaps between the segment's live allocations, less what
//      a large block keeps unsplit) was not in that segment's pool: the policy takes a
//      cached block of the request's pool before it asks the device. So the two are apart:
//      if one is known default, the other is private, and (4) never puts them in one pool.
//   4. An allocation belongs to the segment it landed in. Private segments are grouped into
//      pools: by the final pool id, by a pool's end (released together), and by allocations
//      made back to back in private segments (a `use_mem_pool` scope routes a stretch of
//      requests to one pool); never two groups holding segments shown apart by 5, so two
//      pools that end back to back, or scopes of two pools back to back, stay two. Reading
//      apart only wholly free segments, and joining regardless, left 14 of seeds 501-1000
//      of the stripped mixes inexact that are exact now (482 -> 496), and 49, 68, 105, 148
//      and 283 of the first 300. Of the partly free segments only the latest made are read
//      apart (APART_PARTLY_FREE): the pairs grow with the square of the segments.
//   6. An OOM entry names no address, but a request that failed inside a `use_mem_pool`
//      scope was its pool's: replayed in the default pools, a cached block its pool could
//      not reach may serve it, and the OOM is not reproduced. Under the default settings
//      which pool does not matter: none of its blocks fitted (it failed), and what a failed
//      request releases (the default pools' free segments) is the same from any pool. So
//      replay.ts retries every recorded OOM of a history with private pools in an empty pool
//      of its own, which fails exactly as the real one did, and nothing is read here.
//      Under max_split_size_mb or a garbage-collection threshold a request first frees cached
//      blocks of its own pool, so the pool matters: an OOM between two allocations of one
//      pool is read as that pool's, and one next to an allocation of a live pool on the
//      OOM's own stream (the one before preferred) is left open, read in the default pools
//      unless `forced` says otherwise, and search.ts tries it in the pool. On the first 160
//      stripped mixes the neighbours' reading took 138 exact to 148; the pool of its own,
//      under the default settings, took 1-300 from 282 to 294 and 301-500 to 192, losing none.
//
// Worked example (../shared/fixtures/pytorch-h100-streams.pickle): entries 916-1011 make 32
// segments of 2 MiB and 64 allocations of 1 MiB in them; 1012-1139 free all 64; the OOM at
// 1140 releases nothing. By 2, the 32 segments, wholly free at 1140, are private; by 4 their
// 64 allocations are, in one pool (back to back). The run of 32 frees at 1461 releases
// known private segments: by 3 the pool's end. Replayed in a MemPool released at 1461, the
// history is exact; in the default pools it was not (the allocations reused default blocks).
//
// Not read: expandable segments (pages, not segments, are released), and a recording whose
// trace carries any pool id (ours always do; those are taken as written).
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { inferInitialLive, releasingAction, segmentDelta } from '../analysis/timeline.js';
import { releasesInOrder, settingsOf, startsCacheRelease } from './reading.js';
import { settingsDict, sizePolicy } from './engine.js';
import { rangeHolding } from '../analysis/ranges.js';
import { SMALL_SEGMENT, SMALL_SIZE } from './sizes.js';
import { poolKey } from '../snapshot/pool-id.js';

interface Instance {
  address: number;
  size: number;
  stream: number;
  /** Allocations live in it. */
  live: number;
  /** Its live allocations: address -> rounded size (5 below reads its free gaps). */
  blocks: Map<number, number>;
  /** largestFree's answer while `blocks` is unchanged; -1: to compute. */
  largest: number;
  /** The segments a request showed not in its pool, or it not in theirs (5 below). */
  apart: Set<Instance>;
  known: 'private' | 'default' | null;
  /** The pool id of the final snapshot, when it is still there. */
  finalPool: number;
  index: number;
}

interface Release {
  /** Its first segment free (or the OOM entry), and the entry after its last. */
  at: number;
  end: number;
  released: Instance[];
  survivors: Instance[];
  /** An OOM's release: certainly the default pools'. */
  certain: boolean;
}

export interface InferredPools {
  /** The trace with `pool_id` set on each entry of a private pool, [0, n]. */
  trace: TraceEntry[];
  /** Pools found, and allocations put in them. */
  pools: number;
  allocs: number;
  /** Runs the releases could not decide (by first entry, in order, with the entry after
   *  each) and the reading each was given: its likelier one (3 in the header), or `forced`'s. */
  open: { at: number; end: number; poolEnd: boolean }[];
  /** Under max_split_size_mb or a garbage-collection threshold, the OOMs that may have been
   *  their neighbour's pool's request (6 in the header), by entry, and the reading each was
   *  given: the default pools, or `forced`'s. Empty under the default settings. */
  ooms: { at: number; inPool: boolean }[];
}

/** Partly free segments a request that made a segment is read apart from, at most (5). */
const APART_PARTLY_FREE = 16;

const isPrivate = (id: number[] | undefined): boolean => Array.isArray(id) && (id[0] !== 0 || id[1] !== 0);

/** Pool ids read into a trace without them; null when the trace carries its own or nothing is
 *  found. `forced` holds readings chosen elsewhere (search.ts), by the entry each is
 *  about: a run's first segment free (a pool's end?), or an OOM (its neighbour's pool's?). */
export function inferPrivatePools(s: Snapshot, device: number, forced: ReadonlyMap<number, boolean> = new Map()): InferredPools | null {
  const trace = s.device_traces[device] ?? [];
  if (trace.some((e) => e.pool_id !== undefined || e.action === 'segment_map')) return null;
  const finalSegs = s.segments.filter((g) => g.device === device);
  if (finalSegs.some((g) => g.is_expandable)) return null;

  const instances: Instance[] = [];
  const make = (address: number, size: number, stream: number): Instance => {
    const inst: Instance = { address, size, stream, live: 0, blocks: new Map(), largest: -1, apart: new Set(), known: null, finalPool: 0, index: instances.length };
    instances.push(inst);
    return inst;
  };
  // Open segments by address; the final ones are the last instance at their address.
  const open = new Map<number, Instance>();
  const created = new Set<number>();
  for (const e of trace) if (e.action === 'segment_alloc') created.add(e.addr!);
  const freedFirst = new Set<number>();
  for (const e of trace) {
    if (e.action === 'segment_free' && !created.has(e.addr!) && !freedFirst.has(e.addr!)) {
      freedFirst.add(e.addr!);
      open.set(e.addr!, make(e.addr!, e.size, e.stream));
    }
  }
  for (const g of finalSegs) if (!created.has(g.address) && !open.has(g.address)) open.set(g.address, make(g.address, g.total_size, g.stream));
  const sorted = [...open.values()].sort((a, b) => a.address - b.address);
  const containing = (addr: number): Instance | undefined => rangeHolding(sorted, addr);
  const settings = settingsOf(s);
  const rounded = (n: number) => sizePolicy(settings, n).rounded;
  const owner = new Map<number, Instance>();  // live allocation address -> its segment
  for (const [addr, a] of inferInitialLive(s, device)) {
    const g = containing(addr);
    if (g) {
      g.live++;
      g.blocks.set(addr, a.blockSize ?? rounded(a.size));
      g.largest = -1;
      owner.set(addr, g);
    }
  }

  const release = releasingAction(trace);
  const inOrder = releasesInOrder(settingsDict(settings));
  const allocIn: (Instance | undefined)[] = new Array(trace.length);
  const segmentOf: (Instance | undefined)[] = new Array(trace.length);
  const releases: Release[] = [];
  let run: Instance[] | null = null;
  let runAt = -1;
  const freeNow = (except: Instance[]) => [...open.values()].filter((g) => g.live === 0 && !except.includes(g));
  // Whether the entry before `at` freed memory inside one of `segments` (3 below).
  const freedInside = (at: number, segments: Instance[]): boolean => {
    const before = trace[at - 1];
    if (before?.action !== release || before.addr === undefined) return false;
    return segments.some((g) => before.addr! >= g.address && before.addr! < g.address + g.size);
  };
  // The largest free block a segment surely holds: its longest gap between live allocations,
  // less, in a large segment, the 1 MiB or less a block keeps unsplit past its rounded size.
  const largestFree = (g: Instance): number => {
    if (g.largest >= 0) return g.largest;
    const slack = g.size === SMALL_SEGMENT ? 0 : SMALL_SIZE;
    let best = 0;
    let from = g.address;
    for (const [addr, size] of [...g.blocks].sort((a, b) => a[0] - b[0])) {
      best = Math.max(best, addr - from);
      from = addr + size + slack;
    }
    return (g.largest = Math.max(best, g.address + g.size - from));
  };
  for (let i = 0; i < trace.length; i++) {
    const e = trace[i]!;
    if (run && (segmentDelta(e) >= 0 || startsCacheRelease(trace, i, inOrder))) {
      if (e.action === 'oom' && freedInside(runAt, run)) {
        // Maybe a pool's end just before the OOM (2 in the header): the run is left open.
        releases.push({ at: runAt, end: i, released: run, survivors: freeNow(run), certain: false });
        releases.push({ at: i, end: i + 1, released: [], survivors: freeNow(run), certain: true });
      } else {
        releases.push({ at: runAt, end: i, released: run, survivors: freeNow(run), certain: e.action === 'oom' });
      }
      run = null;
    } else if (e.action === 'oom') {
      releases.push({ at: i, end: i + 1, released: [], survivors: freeNow([]), certain: true });
    }
    if (e.action === 'segment_alloc') {
      const g = make(e.addr!, e.size, e.stream);
      const next = trace[i + 1];
      if (inOrder && next?.action === 'alloc' && next.addr === e.addr) {
        const r = rounded(next.size);
        // Every wholly free one, and the latest made of those partly free: the pairs grow with
        // the square of the segments, and two pools read as one were made close in time.
        const partly: Instance[] = [];
        for (const w of open.values()) {
          if (w.stream !== e.stream || (r <= SMALL_SIZE) !== (w.size === SMALL_SEGMENT) || largestFree(w) < r) continue;
          if (w.live === 0) {
            g.apart.add(w);
            w.apart.add(g);
          } else {
            partly.push(w);
          }
        }
        for (const w of partly.slice(-APART_PARTLY_FREE)) {
          g.apart.add(w);
          w.apart.add(g);
        }
      }
      open.set(e.addr!, g);
      segmentOf[i] = g;
      let at = sorted.length;
      while (at > 0 && sorted[at - 1]!.address > g.address) at--;
      sorted.splice(at, 0, g);
    } else if (e.action === 'segment_free') {
      const g = open.get(e.addr!);
      if (!g) continue;
      segmentOf[i] = g;
      open.delete(e.addr!);
      sorted.splice(sorted.indexOf(g), 1);
      if (!run) {
        run = [];
        runAt = i;
      }
      run.push(g);
    } else if (e.action === 'alloc' && e.addr !== undefined) {
      const was = owner.get(e.addr);
      if (was) {  // the ring lost its free
        was.live--;
        was.blocks.delete(e.addr);
        was.largest = -1;
      }
      const g = containing(e.addr);
      allocIn[i] = g;
      if (g) {
        g.live++;
        g.blocks.set(e.addr, rounded(e.size));
        g.largest = -1;
        owner.set(e.addr, g);
      }
    } else if (e.action === release && e.addr !== undefined) {
      const g = owner.get(e.addr);
      if (g) {
        g.live--;
        g.blocks.delete(e.addr);
        g.largest = -1;
        owner.delete(e.addr);
      }
    }
  }
  if (run) releases.push({ at: runAt, end: trace.length, released: run, survivors: freeNow(run), certain: false });

  // 1: the final segments, the last instance at each address.
  for (const g of finalSegs) {
    const inst = open.get(g.address);
    if (!inst) continue;
    inst.known = isPrivate(g.segment_pool_id) ? 'private' : 'default';
    if (inst.known === 'private') inst.finalPool = poolKey(g.segment_pool_id);
  }
  // 2, 3 and 5, to a fixed point. `poolEnds` keeps the runs read as a pool's end (for 4). A
  // segment known default makes the segments apart from it private (5); one known private
  // tells nothing of them (other pools).
  // A release's reading can change only when one of its segments becomes known: each pass
  // below reads again only those (`dirty`), in release order, so the decisions and their
  // order are those of reading every release each pass, without its cost (the square of the
  // releases when many segments survive many of them).
  const releasesOf = new Map<Instance, Release[]>();
  for (const r of releases) {
    for (const g of [...r.released, ...r.survivors]) {
      const list = releasesOf.get(g);
      if (list) list.push(r);
      else releasesOf.set(g, [r]);
    }
  }
  const dirty = new Set<Release>(releases);
  const mark = (g: Instance, k: 'private' | 'default'): boolean => {
    if (g.known !== null) return false;
    g.known = k;
    for (const r of releasesOf.get(g) ?? []) dirty.add(r);
    if (k === 'default') for (const w of g.apart) mark(w, 'private');
    return true;
  };
  for (const g of instances) if (g.known === 'default') for (const w of g.apart) mark(w, 'private');
  const poolEnds: Instance[][] = [];
  const decided = new Set<Release>();
  const openRuns: Release[] = [];
  const decide = (r: Release, poolEnd: boolean): boolean => {
    decided.add(r);
    let changed = false;
    if (poolEnd) {
      for (const g of r.released) changed = mark(g, 'private') || changed;
      poolEnds.push(r.released);
    } else {
      for (const g of r.survivors) changed = mark(g, 'private') || changed;
      for (const g of r.released) changed = mark(g, 'default') || changed;
    }
    return changed;
  };
  const reading = new Map<Release, boolean>();  // each open run's reading: a pool's end?
  for (const r of releases) {
    const f = forced.get(r.at);
    if (f === undefined || r.certain) continue;
    openRuns.push(r);
    reading.set(r, f);
    decide(r, f);
  }
  // Whether anything but a likelier reading shows a private pool (before the first is made).
  let privateSeen: boolean | undefined;
  let latest = releases.length - 1;  // undecided releases only go, so the latest only moves back
  for (;;) {
    for (let changed = true; changed;) {
      changed = false;
      for (const r of releases) {
        if (decided.has(r) || !dirty.delete(r)) continue;
        const poolEnd = !r.certain && (r.released.some((g) => g.known === 'private') || r.survivors.some((g) => g.known === 'default'));
        const defaults = r.certain || r.released.some((g) => g.known === 'default');
        if (poolEnd !== defaults) changed = decide(r, poolEnd) || changed;  // else open, or contradictory
      }
    }
    // The latest run still open gets its likelier reading (3 above), and the rest are read again.
    while (latest >= 0 && (decided.has(releases[latest]!) || releases[latest]!.released.length === 0)) latest--;
    if (latest < 0) break;
    const next = releases[latest]!;
    privateSeen ??= instances.some((g) => g.known === 'private');
    const poolEnd = privateSeen && freedInside(next.at, next.released);
    openRuns.push(next);
    reading.set(next, poolEnd);
    decide(next, poolEnd);
  }

  // 4: pools. Union-find over private segments; a group that is a known pool (its final id,
  // or the segments one end released) never joins another known one.
  const parent = instances.map((_, k) => k);
  const label: (string | null)[] = instances.map(() => null);
  // Each group's members: two groups holding segments apart (5) never join.
  const members: Instance[][] = instances.map((g) => [g]);
  const find = (k: number): number => (parent[k] === k ? k : (parent[k] = find(parent[k]!)));
  const union = (a: Instance, b: Instance): void => {
    let ra = find(a.index);
    let rb = find(b.index);
    if (ra === rb || (label[ra] !== null && label[rb] !== null && label[ra] !== label[rb])) return;
    if (members[ra]!.length > members[rb]!.length) [ra, rb] = [rb, ra];  // the smaller one's members are read
    for (const g of members[ra]!) for (const w of g.apart) if (find(w.index) === rb) return;
    parent[ra] = rb;
    label[rb] ??= label[ra]!;
    members[rb]!.push(...members[ra]!);
    members[ra] = [];
  };
  for (const g of instances) if (g.known === 'private' && g.finalPool !== 0) label[g.index] = `final ${g.finalPool}`;
  poolEnds.forEach((ended, k) => {
    for (const g of ended) label[find(g.index)] ??= `end ${k}`;
    for (const g of ended.slice(1)) union(g, ended[0]!);
  });
  let previous: Instance | undefined;
  for (let i = 0; i < trace.length; i++) {
    if (trace[i]!.action !== 'alloc') continue;
    const g = allocIn[i];
    if (g?.known === 'private') {
      if (previous) union(g, previous);
      previous = g;
    } else {
      previous = undefined;
    }
  }

  // Ids: a pool still in the final snapshot keeps its own; the others get new ones after all of them.
  const roots = new Map<number, number>();
  let next = Math.max(0, ...finalSegs.map((g) => poolKey(g.segment_pool_id))) + 1;
  for (const g of instances) {
    if (g.known === 'private' && g.finalPool !== 0) roots.set(find(g.index), g.finalPool);
  }
  const poolOf = (g: Instance | undefined): number => {
    if (g?.known !== 'private') return 0;
    const root = find(g.index);
    let id = roots.get(root);
    if (id === undefined) roots.set(root, (id = next++));
    return id;
  };
  let allocs = 0;
  const out = trace.map((e, i) => {
    const g = allocIn[i] ?? segmentOf[i];
    const id = poolOf(g);
    if (id === 0) return e;
    if (e.action === 'alloc') allocs++;
    return { ...e, pool_id: [0, id] };
  });
  // 6: the OOMs' pools.
  const openOoms: InferredPools['ooms'] = [];
  if (!inOrder) {
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
      let inPool = true;
      if (prev !== 0 && prev === next) {
        pool = prev;
      } else if (prev !== 0 && out[before]!.stream === e.stream) {
        pool = prev;
      } else if (next !== 0 && out[after]!.stream === e.stream) {
        pool = next;
      }
      if (pool === 0) continue;
      if (prev !== next) {
        inPool = forced.get(i) ?? false;
        openOoms.push({ at: i, inPool });
      }
      if (inPool) out[i] = { ...e, pool_id: [0, pool] };
    }
  }
  return allocs === 0 && !out.some((e, i) => e !== trace[i]) ? null
    : {
      trace: out, pools: roots.size, allocs, ooms: openOoms,
      open: openRuns.sort((a, b) => a.at - b.at).map((r) => ({ at: r.at, end: r.end, poolEnd: reading.get(r)! })),
    };
}
