// What a recorded history says beyond its allocs and frees, for replay: its settings, where
// the cache was released and whether inside a request, the device's size, why the replay
// parted from it, and the order of segment events to compare with ours. (The segments of
// its start: start-layout.ts.)
//
// Note [Releases inside a request]
// A request that finds no cached block and no room on the device synchronizes every pending
// free, releases the cache and tries again. A trace shows it as:
//
//   120  free_requested  0x...200000   4 MiB  stream 7   the program frees; its event is pending
//   ...
//   180  free_completed  0x...200000   4 MiB  stream 7 } the frees the request synchronized
//   181  segment_free    0x...000000  20 MiB           } its release: every wholly free segment,
//   182  segment_free    0x...a00000   2 MiB           }   large pool first (startsCacheRelease)
//   183  segment_alloc   0x...e00000  40 MiB           } its outcome: the new segment and the
//   184  alloc           0x...e00000  33 MiB           }   alloc (or an oom entry)
//
// Replayed as it reads (frees, then empty_cache(), then the request) the request would take
// the blocks entry 180 gave back, which the recorded request never saw: its cached search came
// before them. But the same entries also follow an empty_cache() and then a request that
// needed a new segment. releasesInRequests finds such sequences (keyed by their first entry,
// 180 here); the replay decides when it gets there (releases.ts): if our cache would serve
// entry 184's request then (native planMalloc), the recorded search cannot have failed, so it
// was an empty_cache(). Otherwise the frees (180) are replayed as frees left pending on a held
// stream, the run from 181 is not replayed as empty_cache(), and when the recording released
// something, 184's first device malloc fails, so our own request synchronizes, releases by our
// policy and tries again: the same segments go, by the same rule. Two settings change the
// order. With max_split_size_mb a request first releases its oversize blocks, before it
// synchronizes; the replay decides at the release itself which reading fits (failedMallocs:
// the release must begin with exactly the oversize segments ours would free first). With
// expandable segments the outcome is the pages mapped before the alloc, and the request may
// have mapped its first pages before the device ran out (`mappedBefore`): our own request's
// map then fails once it has mapped as much. A MemPool's end right before such a request is
// not its release (releases.ts, poolEndAt).
import type { Snapshot, TraceEntry } from '../snapshot/types.js';
import { configFromSettings } from '../allocator-options.js';
import { replayEngine } from './engine.js';
import { humanBytes } from '../format.js';
import { snapshotArg } from '../analysis/args.js';
import { segmentDelta } from '../analysis/timeline.js';
import { SMALL_SEGMENT } from './sizes.js';
import { poolKey } from '../snapshot/pool-id.js';

/** A segment free or unmap: memory given back. */
const releases = (e: TraceEntry | undefined): boolean => e !== undefined && segmentDelta(e) < 0;

/** The snapshot's allocator settings as a config string ('' for the defaults). */
export function settingsOf(snapshot: Snapshot): string {
  const s = snapshotArg(snapshot);
  const a = (s.allocator_settings ?? {}) as Record<string, unknown>;
  if (typeof a.PYTORCH_CUDA_ALLOC_CONF === 'string' && a.PYTORCH_CUDA_ALLOC_CONF.trim() !== '') {
    return a.PYTORCH_CUDA_ALLOC_CONF.trim();
  }
  return configFromSettings(a, replayEngine());
}

/**
 * Whether the segment free at `i` opens a run of segment frees: the cache released, by
 * empty_cache(), a MemPool's release, or a request that found no room (releasesInRequests).
 * One release frees a pool's segments in the order of its free set (large pool first, then
 * by stream, size and address), so a segment that comes before the previous one in that
 * order was freed by the next call: a MemPool's end followed at once by an empty_cache()
 * shows as one run in the trace, and is read as two. `inOrder` false: the settings release
 * in other orders too (oversize blocks largest first with max_split_size_mb, garbage
 * collection by age), and only a run's first free starts one.
 */
export function startsCacheRelease(trace: readonly TraceEntry[], i: number, inOrder = false): boolean {
  return releases(trace[i]) && (!releases(trace[i - 1]) || (inOrder && startsAnotherCall(trace[i - 1]!, trace[i]!)));
}

/** The entry after the run of segment frees that starts at `i` (see startsCacheRelease). */
export function runEnd(trace: readonly TraceEntry[], i: number, inOrder = false): number {
  let j = i + 1;
  while (j < trace.length && releases(trace[j]) && !(inOrder && startsAnotherCall(trace[j - 1]!, trace[j]!))) j++;
  return j;
}

/** Whether releases under these settings free segments in the order of the free set only. */
export function releasesInOrder(settings: Record<string, unknown>): boolean {
  const positive = (v: unknown) => typeof v === 'number' && v > 0;
  return !positive(settings.max_split_size) && !positive(settings.garbage_collection_threshold);
}

function startsAnotherCall(before: TraceEntry, e: TraceEntry): boolean {
  if (before.action !== 'segment_free' || e.action !== 'segment_free') return false;
  // The default pools are released before any pool's, in one call.
  if (poolKey(before.pool_id) !== 0 && poolKey(e.pool_id) === 0) return true;
  const key = (x: TraceEntry) => [x.size === SMALL_SEGMENT ? 1 : 0, x.stream, x.size, x.addr ?? 0];
  const a = key(before);
  const b = key(e);
  for (let k = 0; k < a.length; k++) if (a[k] !== b[k]) return b[k]! < a[k]!;
  return false;
}

/** A release inside a request (Note [Releases inside a request]). */
export interface ReleaseInRequest {
  /** The request's outcome: its alloc (after the segment or pages made for it) or its oom. */
  request: number;
  /** The free_completed entries it synchronized. */
  frees: number[];
  /** The first entries of each run of its segment frees (two when it released oversize
   *  blocks first, then synchronized and released the rest). */
  runs: number[];
  /** Expandable segments: the bytes it mapped before the device ran out (its first pages). */
  mappedBefore: number;
}

/** `releasesFirst`: a request may release memory before it synchronizes (oversize blocks with
 *  max_split_size_mb, garbage collection with a threshold). `inOrder`: see startsCacheRelease. */
export function releasesInRequests(trace: readonly TraceEntry[], freeAt: string, expandable: boolean,
  releasesFirst = false, inOrder = false): Map<number, ReleaseInRequest> {
  const out = new Map<number, ReleaseInRequest>();
  if (freeAt !== 'free_completed') return out;
  const maps = (j: number) => j >= 0 && trace[j]!.action === 'segment_map';
  for (let q = 0; q < trace.length; q++) {
    const e = trace[q]!;
    let start: number;
    if (e.action === 'oom') start = q;
    else if (!expandable && e.action === 'alloc' && q > 0 && trace[q - 1]!.action === 'segment_alloc' && trace[q - 1]!.addr === e.addr) start = q - 1;
    else if (expandable && e.action === 'alloc' && maps(q - 1)) {
      // An expandable segment grows by the pages mapped just before the alloc.
      start = q - 1;
      while (maps(start - 1)) start--;
    } else continue;
    // The request's own release: back to the start of its call (a pool's end may come just before).
    let k = start - 1;
    while (releases(trace[k]) && !(inOrder && k + 1 < start && startsAnotherCall(trace[k]!, trace[k + 1]!))) k--;
    // Without max_split_size_mb it does not matter whether a free just before the request was
    // the program's (done at once) or one the request waited for: pending, it is completed by
    // our request's synchronization before anything is released, and the request's cached
    // search could not have used it either way. With max_split_size_mb the request releases
    // oversize blocks before it synchronizes, so a free completed in the same microsecond it
    // was requested (nothing to wait for) counts as the program's. (A free that waited and
    // completed within the same microsecond is then misread: the trace cannot tell.)
    const immediate = (j: number) => releasesFirst && j > 0 && trace[j - 1]!.action === 'free_requested' &&
      trace[j - 1]!.addr === trace[j]!.addr && trace[j - 1]!.time_us === trace[j]!.time_us;
    let f = k;
    while (f >= 0 && trace[f]!.action === 'free_completed' && !immediate(f)) f--;
    if (f === start - 1) continue;  // nothing synchronized or released before it
    const frees: number[] = [];
    for (let j = f + 1; j <= k; j++) frees.push(j);
    // An expandable segment's first pages may have been mapped before the device ran out.
    let mappedBefore = 0;
    if (expandable) {
      for (; maps(f); f--) mappedBefore += trace[f]!.size;
    }
    // With max_split_size_mb the request first released its oversize blocks, before it
    // synchronized: a run of segment frees just before those frees is the same request's.
    let first = f + 1;
    const runs = k < start - 1 ? [k + 1] : [];
    if (releasesFirst && frees.length > 0 && releases(trace[f])) {
      let a = f;
      while (releases(trace[a])) a--;
      runs.push(a + 1);
      first = a + 1;
    }
    // An expandable segment grows by mapping more pages after frees all the time; only a
    // release (unmapped pages) shows that the device ran out first.
    if (expandable && runs.length === 0) continue;
    // Keyed by where the replay must decide: the first entry of the sequence.
    out.set(first, { request: q, frees, runs, mappedBefore });
  }
  return out;
}

/**
 * With max_split_size_mb, how many device mallocs of the request failed in the recording,
 * read from its release and what our request would release first (`first`: the oversize
 * segments, largest first or one that fits, and whether it then retries; native
 * planMalloc). With nothing to release first, one failure: our request then releases
 * everything, as the recording did. Otherwise the recorded release must begin with exactly
 * those segments (of the request's stream and pool), or it was not this request's: an
 * empty_cache() before it (null). It failed twice when it retried after them and still
 * released more.
 */
export function failedMallocs(trace: readonly TraceEntry[], c: ReleaseInRequest, first: { sizes: number[]; retries: boolean }): number | null {
  if (first.sizes.length === 0) return 1;
  const request = trace[c.request]!;
  const released: TraceEntry[] = [];
  for (let j = Math.min(...c.runs); releases(trace[j]); j++) released.push(trace[j]!);
  // Oversize blocks are released from the request's own stream and pool only.
  const same = (e: TraceEntry | undefined, size: number) => e !== undefined && e.size === size && e.stream === request.stream &&
    poolKey(e.pool_id) === poolKey(request.pool_id);
  if (!first.sizes.every((size, k) => same(released[k], size))) return null;
  return first.retries && (c.runs.length === 2 || released.length > first.sizes.length) ? 2 : 1;
}

/** A free segment of ours, by the recording's stream id. */
export interface FreeSegment {
  small: boolean;
  stream: number;
  size: number;
  address: number;
}

/**
 * Whether the run of segment frees starting at `at` is the release of exactly `free`, in the
 * order release_cached_blocks gives them back: the large pool first, each pool in (stream,
 * size, address) order.
 */
export function isReleaseOfAll(trace: readonly TraceEntry[], at: number, free: FreeSegment[]): boolean {
  const order = [...free].sort((a, b) => Number(a.small) - Number(b.small) || a.stream - b.stream || a.size - b.size || a.address - b.address);
  for (let k = 0; k < order.length; k++) {
    const e = trace[at + k];
    if (!releases(e) || e!.size !== order[k]!.size || e!.stream !== order[k]!.stream) return false;
  }
  return !releases(trace[at + order.length]);
}

/** The recorded device's total memory, from its OOM entries: free bytes then plus reserved
 *  then (`reserved`: the reserved bytes after each entry). */
export function recordedCapacity(trace: readonly TraceEntry[], reserved: Float64Array): number | undefined {
  let total = 0;
  trace.forEach((e, i) => {
    if (e.action === 'oom' && typeof e.device_free === 'number') total = Math.max(total, e.device_free + reserved[i]!);
  });
  return total > 0 ? Math.min(total, 2 ** 40) : undefined;
}

/** The segment events (alloc/free/map/unmap and their sizes) in order, ours against the
 *  recording's: equal when `firstMismatch` is null. */
export interface SegmentEventComparison {
  recorded: number;
  ours: number;
  firstMismatch: { at: number; recorded: string; ours: string } | null;
}

const SEGMENT_ACTIONS = new Set(['segment_alloc', 'segment_free', 'segment_map', 'segment_unmap']);

/** The first place where the two sequences of segment events (action and size) differ. */
export function compareSegmentEvents(recorded: readonly TraceEntry[], ours: readonly TraceEntry[]): SegmentEventComparison {
  const label = (e: TraceEntry | undefined) => (e ? `${e.action} ${e.size}` : '(none)');
  const a = recorded.filter((e) => SEGMENT_ACTIONS.has(e.action));
  const b = ours.filter((e) => SEGMENT_ACTIONS.has(e.action));
  let firstMismatch: SegmentEventComparison['firstMismatch'] = null;
  for (let i = 0; i < Math.max(a.length, b.length); i++) {
    if (label(a[i]) !== label(b[i])) {
      firstMismatch = { at: i, recorded: label(a[i]), ours: label(b[i]) };
      break;
    }
  }
  return { recorded: a.length, ours: b.length, firstMismatch };
}


/** What the replay knew when reserved memory first parted, for the report's reason. */
export interface DivergenceContext {
  action: string;
  /** Entries after the last one where both sides agreed, up to this one. */
  since: number;
  at: number;
  /** How each cache release (by its first entry) was replayed. */
  releases: ReadonlyMap<number, string>;
  /** Growth of reserved memory since the last agreement, each side. */
  recordedStep: number;
  ourStep: number;
  /** Readings of the history that may have placed a block differently before. */
  caveats: string[];
}

const change = (n: number) => (n > 0 ? `grew by ${humanBytes(n)}` : n < 0 ? `shrank by ${humanBytes(-n)}` : 'did not change');

/** Why reserved memory parted, as far as the replay can tell. */
export function divergenceReason(c: DivergenceContext): string {
  let text = '';
  for (const [run, reading] of c.releases) {
    if (run > c.since && run <= c.at) {
      text = `the cache release from entry ${run} was replayed as ${reading}, and after it the recording's reserved memory ` +
        `${change(c.recordedStep)}, ours ${change(c.ourStep)}`;
    }
  }
  if (text === '') {
    text = `at this ${c.action} the recording's reserved memory ${change(c.recordedStep)}, ours ${change(c.ourStep)}: ` +
      'the two caches held different free blocks though they held the same reserved memory';
  }
  return c.caveats.length > 0 ? `${text} (${c.caveats.join('; ')})` : text;
}
