// How a replay meets each run of segment frees in the recording: as the release inside a
// request that found no room, as a MemPool's end, or as an empty_cache() (the rules and a
// worked example: Note [Releases inside a request] in reading.ts). The loop asks only at
// entries marked in `marks`, so the usual entry costs one array read.
import type { TraceEntry } from '../snapshot/types.js';
import type { SimDriver } from './driver.js';
import type { Recording } from './recording.js';
import {
  failedMallocs, isReleaseOfAll, releasesInOrder, releasesInRequests, runEnd, type ReleaseInRequest,
} from './reading.js';
import { poolKey } from '../snapshot/pool-id.js';

/** What the loop must ask about at an entry. */
export const DECIDE = 1;
/** Inject the request's device malloc failures before replaying it. */
export const FAIL = 2;
/** A free the recorded request synchronized: ours leaves it pending. */
export const FREE_IN_REQUEST = 4;

interface Undecided {
  candidate: ReleaseInRequest;
  request: TraceEntry;
  pool: number;
  before: number;
}

export class Releases {
  readonly marks: Uint8Array;
  /** Whether releases under the settings tried free segments in their free set's order. */
  readonly inOrder: boolean;
  /** Entries before this one happened inside one recorded request, which ours replays as one
   *  call: reserved memory is compared after it, not at its steps. */
  insideRequestUntil = -1;
  /** How each release (by its first entry) was replayed, for the divergence's reason. */
  readonly readings = new Map<number, string>();
  count = 0;
  readonly #trace: readonly TraceEntry[];
  readonly #rec: Recording;
  readonly #driver: SimDriver;
  readonly #maxSplit: boolean;
  readonly #limited: boolean;
  readonly #candidates: Map<number, ReleaseInRequest>;
  readonly #runs = new Set<number>();
  readonly #requestOf = new Map<number, number>();
  readonly #failFirstTry = new Map<number, number>();
  /** Expandable segments: the bytes a request maps before its failure. */
  readonly #failAfter = new Map<number, number>();
  /** Releases inside requests whose failure count is decided when the replay reaches them. */
  readonly #undecided = new Map<number, Undecided>();

  constructor(rec: Recording, driver: SimDriver) {
    this.#trace = rec.trace;
    this.#rec = rec;
    this.#driver = driver;
    const active = driver.settings();
    this.#maxSplit = typeof active.max_split_size === 'number' && active.max_split_size > 0;
    // With a memory fraction the limit, not the device, refuses new segments: our requests
    // meet it by themselves (and collect garbage, with a threshold), so nothing is injected.
    this.#limited = typeof active.per_process_memory_fraction === 'number' && active.per_process_memory_fraction >= 0;  // -1: not set
    const collects = this.#limited && typeof active.garbage_collection_threshold === 'number' && active.garbage_collection_threshold > 0;
    this.inOrder = releasesInOrder(active);
    this.#candidates = releasesInRequests(rec.trace, rec.freeAt, active.expandable_segments === true, this.#maxSplit || collects, this.inOrder);
    this.marks = new Uint8Array(rec.trace.length);
    for (const i of this.#candidates.keys()) this.marks[i]! |= DECIDE;
  }

  /** The pools whose end the run of segment frees from `i` is: only segments of MemPools that
   *  allocate nothing afterwards (null: not such a run). */
  poolEndAt(i: number): Set<number> | null {
    const ended = new Set<number>();
    for (let j = i, end = runEnd(this.#trace, i, this.inOrder); j < end; j++) {
      const id = poolKey(this.#trace[j]!.pool_id);
      if (id === 0 || (this.#rec.lastPoolAlloc.get(id) ?? -1) > j) return null;
      ended.add(id);
    }
    return ended;
  }

  /** At an entry marked DECIDE: whether a release inside a request starts here, and if it was
   *  decided earlier pending the replay's state, how many device mallocs of it failed. */
  decide(i: number): void {
    const candidate = this.#candidates.get(i);
    // A pool's end just before a request that needed a new segment is not that request's release.
    if (candidate && !(candidate.runs.length === 1 && this.poolEndAt(candidate.runs[0]!))) this.#take(candidate);
    const pending = this.#undecided.get(i);
    if (pending) this.#settle(i, pending);
  }

  #take(candidate: ReleaseInRequest): void {
    const request = this.#trace[candidate.request]!;
    const pool = this.#driver.knownPool(poolKey(request.pool_id));
    // With max_split_size_mb it is decided at the release itself (#settle); until then the
    // frees before it are the request's.
    const atRelease = this.#maxSplit && !this.#limited && candidate.runs.length > 0 && pool >= 0;
    const plan = !atRelease && pool >= 0 ? this.#driver.plan(request.size, request.stream, pool) : null;
    const failures = atRelease ? 0
      : plan?.cached ? null
      : this.#limited ? (plan?.limitReleases ? 0 : null)
      : candidate.runs.length === 0 ? 0 : 1;
    if (failures === null) return;
    if (candidate.mappedBefore > 0) this.#failAfter.set(candidate.request, candidate.mappedBefore);
    for (const j of candidate.frees) this.marks[j]! |= FREE_IN_REQUEST;
    for (const run of candidate.runs) {
      this.#runs.add(run);
      this.#requestOf.set(run, candidate.request);
    }
    if (atRelease) {
      const at = Math.min(...candidate.runs);
      this.#undecided.set(at, { candidate, request, pool, before: this.insideRequestUntil });
      this.marks[at]! |= DECIDE;
    } else if (failures > 0) {
      this.#fail(candidate.request, failures);
    }
    this.insideRequestUntil = candidate.request;
  }

  #fail(request: number, count: number): void {
    this.#failFirstTry.set(request, count);
    this.marks[request]! |= FAIL;
  }

  // The request's cached search failed, and the release must begin with the oversize segments
  // ours would release first. The frees just before it, left pending as the request's, may
  // instead have completed before the request looked (its first step completes finished
  // frees): the reading that fits is taken, that one first.
  #settle(i: number, { candidate, request, pool, before }: Undecided): void {
    const driver = this.#driver;
    const reading = (): number | null => {
      const plan = driver.plan(request.size, request.stream, pool);
      if (plan.cached) return null;
      const first = { sizes: plan.oversizeSizes, retries: plan.oversizeRetries };
      const n = failedMallocs(this.#trace, candidate, first);
      // Releasing nothing first, the request would synchronize and release every free
      // segment of the default pools, those the pending frees empty too.
      return n !== null && first.sizes.length === 0 && driver.hasPending() && !isReleaseOfAll(this.#trace, i, driver.freeDefaultSegments())
        ? null : n;
    };
    let n = reading();
    if (n === null && driver.hasPending()) {
      driver.completePending();
      n = reading();
    }
    if (n === null) {
      // Not the request's release: an empty_cache() before it.
      driver.completePending();
      for (const j of candidate.frees) this.marks[j]! &= ~FREE_IN_REQUEST;
      for (const run of candidate.runs) this.#runs.delete(run);
      this.insideRequestUntil = before;
    } else if (n > 0) {
      this.#fail(candidate.request, n);
    }
  }

  /** At an entry marked FAIL: the device was full for this request's first try in the
   *  recording, so it is here. */
  inject(i: number): void {
    this.#driver.injectFailures(this.#failFirstTry.get(i)!, this.#failAfter.get(i) ?? 0);
  }

  /** At the first segment free of a run: replays it. A release inside a request is left to
   *  our own request; any other is empty_cache(), but a run of only the segments of MemPools
   *  that allocate nothing afterwards is the release of those pools by the program. */
  release(i: number): void {
    this.count++;
    if (this.#runs.has(i)) {
      const q = this.#requestOf.get(i)!;
      const n = this.#failFirstTry.get(q) ?? 0;
      const how = this.#limited ? 'under the memory fraction' : `its device malloc failing ${n === 1 ? 'once' : `${n} times`}`;
      this.readings.set(i, `the release inside the request at entry ${q} (${how})`);
      return;
    }
    const released = this.poolEndAt(i);
    if (released) {
      for (const id of released) this.#driver.releasePool(id);
      this.readings.set(i, `the release of MemPool ${[...released].join(', ')}`);
    } else {
      this.#driver.emptyCache();
      this.readings.set(i, 'an empty_cache()');
    }
  }
}
