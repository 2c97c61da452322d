// Which allocations of a recording went to private pools (MemPools), for a file that does not
// say: PyTorch 2.11 writes no `pool_id` in trace entries, only `segment_pool_id` on the final
// segments, so a pool released before the dump leaves no mark of its own. Replaying such
// allocations in the default pools serves them from blocks the recorded ones could never
// see, and reads the pool's end as an empty_cache().
//
// Note [Private pools read from a trace that names none]
// What the recording does show is where the cache was released, and the policy says what a
// release of the default pools does: release_cached_blocks() frees every free segment of the
// default pools (after completing pending frees, which the trace shows as free_completed
// entries before it) and leaves live private pools alone. The trace is walked once
// (pool-walk.ts: every segment's life, what lies in it, every run of segment frees with the
// segments it released and those wholly free that survived it); then six rules, in order:
//
//   1. A segment of the final snapshot carries its pool: private or default, for certain
//      (knownFromFinal, below).
//   2. An out-of-memory entry follows a release of the default pools (the run of segment
//      frees just before it, if any): a segment wholly free then that survived it is a
//      private pool's. But when the entry before that run freed memory inside one of its
//      segments, the run may be a pool that ended just before the OOM (whose own release
//      then freed nothing): it is left open for 3, and only the OOM's survivors are certain
//      (pool-walk.ts, closeRun).
//   3. Any other run of segment frees is an empty_cache() (the default pools) or a pool's
//      end (a MemPool released: only its own segments go). If one segment it released is
//      known private or one survivor known default, it was a pool's end, and every segment
//      it released is that pool's; if one released is known default, it was the default
//      pools', and every survivor is private. (A survivor known private tells nothing:
//      other pools live through both.) Read again until nothing changes; then the latest
//      run still open is given its likelier reading and the rest read again (latest first: a
//      default segment that survived an earlier pool's end is then seen released by it).
//      Likelier: a pool's end when the entry just before the run freed memory inside one of
//      the segments it releases (a MemPool ends when its last user lets go, so its last
//      tensor's free comes right before its segments go), else an empty_cache(), which
//      releases whatever is free whenever it was freed. Where nothing else shows a private
//      pool (no final segment of one, no segment an OOM's release left), every open run is
//      read as an empty_cache(): a program that empties the cache right after freeing, with
//      no MemPool, would otherwise be read as a pool per call. search.ts tries the other
//      reading of each open run against the recording (pool-releases.ts).
//   4. A request that made a segment while a segment on its stream held a free block that
//      would have served it (of the small pool for a small request, the large for a large;
//      the free block read from the gaps between the segment's live allocations, less what
//      a large block keeps unsplit) was not in that segment's pool: the policy takes a
//      cached block of the request's pool before it asks the device. So the two are apart:
//      if one is known default, the other is private, and 5 never puts them in one pool. Of
//      the partly free segments only the latest made are read apart (APART_PARTLY_FREE):
//      the pairs grow with the square of the segments (pool-walk.ts, readApart; its
//      consequence in pool-releases.ts).
//   5. An allocation belongs to the segment it landed in. Private segments are grouped into
//      pools: by the final pool id, by a pool's end (released together), and by allocations
//      made back to back in private segments (a `use_mem_pool` scope routes a stretch of
//      requests to one pool); never two groups holding segments apart by 4, so two pools
//      that end back to back, or scopes of two pools back to back, stay two
//      (pool-groups.ts).
//   6. An OOM entry names no address, but a request that failed inside a `use_mem_pool`
//      scope was its pool's: replayed in the default pools, a cached block its pool could
//      not reach may serve it, and the OOM is not reproduced. Under the default settings
//      which pool does not matter: none of its blocks fitted (it failed), and what a failed
//      request releases (the default pools' free segments) is the same from any pool. So
//      replay.ts retries every recorded OOM of a history with private pools in an empty pool
//      of its own, which fails exactly as the real one did, and nothing is read here. Under
//      max_split_size_mb or a garbage-collection threshold a request first frees cached
//      blocks of its own pool, so the pool matters: an OOM between two allocations of one
//      pool is read as that pool's, and one next to an allocation of a live pool on the
//      OOM's own stream (the one before preferred) is left open, read in the default pools
//      unless `forced` says otherwise, and search.ts tries it in the pool (pool-ooms.ts).
//
// What each rule bought, on generated histories stripped of their pool ids, is in
// bench/RESULTS.md ("Private pools read from traces that name none").
//
// Worked example (../shared/fixtures/pytorch-h100-streams.pickle): entries 916-1011 make 32
// segments of 2 MiB and 64 allocations of 1 MiB in them; 1012-1139 free all 64; the OOM at
// 1140 releases nothing. By 2, the 32 segments, wholly free at 1140, are private; by 5 their
// 64 allocations are, in one pool (back to back). The run of 32 frees at 1461 releases
// known private segments: by 3 the pool's end. Replayed in a MemPool released at 1461, the
// history is exact; in the default pools it was not (the allocations reused default blocks).
//
// Not read: expandable segments (pages, not segments, are released), and a recording whose
// trace carries any pool id (ours always do; those are taken as written).
import type { Segment, Snapshot, TraceEntry } from '../snapshot/types.js';
import { poolKey } from '../snapshot/pool-id.js';
import { releasesInOrder, settingsOf } from './reading.js';
import { settingsDict, sizePolicy } from './engine.js';
import { walkSegments, type Instance } from './pool-walk.js';
import { readReleases } from './pool-releases.js';
import { groupPools } from './pool-groups.js';
import { readOomPools } from './pool-ooms.js';

export interface InferredPools {
  /** The trace with `pool_id` set on each entry of a private pool, [0, n]. */
  trace: TraceEntry[];
  /** Pools found, and allocations put in them. */
  pools: number;
  allocs: number;
  /** Runs the releases could not decide (by first entry, in order, with the entry after
   *  each) and the reading each was given: its likelier one (rule 3), or `forced`'s. */
  open: { at: number; end: number; poolEnd: boolean }[];
  /** Under max_split_size_mb or a garbage-collection threshold, the OOMs that may have been
   *  their neighbour's pool's request (rule 6), by entry, and the reading each was
   *  given: the default pools, or `forced`'s. Empty under the default settings. */
  ooms: { at: number; inPool: boolean }[];
}

const isPrivate = (id: number[] | undefined): boolean => Array.isArray(id) && (id[0] !== 0 || id[1] !== 0);

/** Rule 1: the segments still open at the end are the final snapshot's, which carry their pool. */
export function knownFromFinal(finalSegs: Segment[], open: ReadonlyMap<number, Instance>): void {
  for (const g of finalSegs) {
    const inst = open.get(g.address);
    if (!inst) continue;
    inst.known = isPrivate(g.segment_pool_id) ? 'private' : 'default';
    if (inst.known === 'private') inst.finalPool = poolKey(g.segment_pool_id);
  }
}

/** Pool ids read into a trace without them; null when the trace carries its own or nothing is
 *  found. `forced` holds readings chosen elsewhere (search.ts), by the entry each is
 *  about: a run's first segment free (a pool's end?), or an OOM (its neighbour's pool's?). */
export function inferPrivatePools(s: Snapshot, device: number, forced: ReadonlyMap<number, boolean> = new Map()): InferredPools | null {
  const trace = s.device_traces[device] ?? [];
  if (trace.some((e) => e.pool_id !== undefined || e.action === 'segment_map')) return null;
  const finalSegs = s.segments.filter((g) => g.device === device);
  if (finalSegs.some((g) => g.is_expandable)) return null;
  const settings = settingsOf(s);
  const inOrder = releasesInOrder(settingsDict(settings));
  const walk = walkSegments(s, device, (n) => sizePolicy(settings, n).rounded, inOrder);
  knownFromFinal(finalSegs, walk.open);
  const { poolEnds, open } = readReleases(walk, forced);
  const groups = groupPools(walk, poolEnds, finalSegs);
  let allocs = 0;
  const out = trace.map((e, i) => {
    const id = groups.poolOf(walk.allocIn[i] ?? walk.segmentOf[i]);
    if (id === 0) return e;
    if (e.action === 'alloc') allocs++;
    return { ...e, pool_id: [0, id] };
  });
  const ooms = inOrder ? [] : readOomPools(out, forced);
  return allocs === 0 && !out.some((e, i) => e !== trace[i]) ? null
    : {
      trace: out, pools: groups.count(), allocs, ooms,
      open: [...open].sort((a, b) => a[0].at - b[0].at).map(([r, poolEnd]) => ({ at: r.at, end: r.end, poolEnd })),
    };
}
