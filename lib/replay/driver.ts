// The simulated GPU a replay runs on, and the only replay file that calls the addon. It owns
// the runtime for the replay's length (fresh simulated devices under the settings tried),
// our streams and MemPools for the recorded ones, every live allocation's pointer by slot
// (recording.ts numbers them), the held stream that keeps a request's frees pending, and
// an injected device failure. Plain numbers throughout: a million-entry replay makes no
// DeviceBuffer, Stream or MemPool object, and dispose() leaves the runtime empty whatever
// happened.
import * as cuda from '../cuda.js';
import * as memory from '../memory.js';
import { deviceCount } from '../device.js';
import { InvalidArgumentError } from '../errors.js';
import { native } from '../native.js';
import { readSamples } from '../monitoring/metrics.js';
import type { TraceEntry } from '../snapshot/types.js';
import type { PeakState } from './report.js';
import type { FreeSegment } from './reading.js';
import { poolKey } from '../snapshot/pool-id.js';

/** Replays run on device 0 of their simulated runtime, whichever device was recorded. */
const DEVICE = 0;

/** The block size and segment size a request gets under `settings` (no runtime needed). */
export function sizePolicy(settings: string, size: number): { rounded: number; segment: number } {
  return native.sizePolicy(settings, size);
}

/** PyTorch's allocator_settings dict for a config string. */
export function settingsDict(settings: string): Record<string, unknown> {
  return native.allocatorSettings(settings);
}

/** Refuses a bad config string with the parser's coded error. */
export function checkSettings(settings: string): void {
  native.checkAllocatorSettings(settings);
}

/** What planMalloc answers: the cached block a request would take, and its fallbacks. */
export type MallocPlan = ReturnType<typeof native.planMalloc>;

export class SimDriver {
  /** Each slot's pointer; -1 while not live. */
  readonly #ptr: Float64Array;
  /** Recorded stream id -> our stream's handle. */
  readonly #streams = new Map<number, number>();
  /** Recorded pool n -> our MemPool's n, and ours given up already. */
  readonly #pools = new Map<number, number>();
  readonly #released = new Set<number>();
  readonly #stat: Map<string, number>;
  readonly #reservedAt: number;
  /** A held stream: frees recorded on it stay pending until completePending(). */
  #blocker = 0;
  #pending = 0;
  #injected = false;

  /**
   * Replaces this thread's runtime with one simulated device of `capacityBytes` under
   * `settings`, with `slots` allocation slots and our streams made for `streams` (recorded
   * ids, made in that order: free blocks are ordered by stream, so releases keep the recorded
   * order). Refuses while memory is allocated: replay would orphan it.
   */
  constructor(capacityBytes: number, settings: string, slots: number, streams: readonly number[]) {
    for (let d = 0; d < deviceCount(); d++) {
      const held = memory.memory_allocated(d);
      if (held > 0) {
        throw new InvalidArgumentError(`replay replaces the allocator runtime, but device ${d} still has ` +
          `${held} bytes allocated: free them first, or run replay in its own process (cca replay)`, 'ERR_CCA_RUNTIME_BUSY');
      }
    }
    cuda.sim.configure({ devices: 1, capacityBytes });
    memory._set_allocator_settings(settings);
    this.#ptr = new Float64Array(slots).fill(-1);
    this.#stat = new Map(native.statKeys().map((k, i) => [k, i]));
    this.#reservedAt = this.#stat.get('reserved_bytes.all.current')!;
    for (const id of streams) this.handle(id);
  }

  /** The active settings, as PyTorch's dict. */
  settings(): Record<string, unknown> {
    return memory.get_allocator_settings() as Record<string, unknown>;
  }

  /** Our stream for a recorded one (0: the default stream), made on first use. */
  handle(stream: number): number {
    if (stream === 0) return 0;
    let h = this.#streams.get(stream);
    if (h === undefined) {
      h = native.streamCreate(DEVICE);
      this.#streams.set(stream, h);
    }
    return h;
  }

  /** The recorded stream id of one of ours. */
  recordedStream(handle: number): number {
    for (const [id, h] of this.#streams) if (h === handle) return id;
    return 0;
  }

  /** Our MemPool's n for a recorded pool n (0: the default pools), made on first use. */
  pool(pool: number): number {
    if (pool === 0) return 0;
    let n = this.#pools.get(pool);
    if (n === undefined) {
      n = native.poolCreate(DEVICE, false, false);
      this.#pools.set(pool, n);
    }
    return n;
  }

  /** Like pool(), but -1 for a pool not made yet (nothing allocated in it so far). */
  knownPool(pool: number): number {
    return pool === 0 ? 0 : this.#pools.get(pool) ?? -1;
  }

  /** Allocates into `slot`; throws CudaOutOfMemoryError when it does not fit. */
  alloc(slot: number, pool: number, size: number, stream: number): void {
    const handle = this.handle(stream);
    if (pool === 0) {
      this.#ptr[slot] = native.alloc(DEVICE, size, handle);
      return;
    }
    const n = this.pool(pool);
    native.poolBegin(DEVICE, n);
    try {
      this.#ptr[slot] = native.alloc(DEVICE, size, handle);
    } finally {
      native.poolEnd(DEVICE, n);
    }
  }

  /** Allocates and frees at once (a recorded OOM's request tried again). */
  allocAndFree(pool: number, size: number, stream: number): void {
    const scratch = this.#ptr.length - 1;
    this.alloc(scratch, pool, size, stream);
    this.free(scratch);
  }

  /** Frees the slot's allocation; false when it holds none. */
  free(slot: number): boolean {
    const p = this.#ptr[slot]!;
    if (p < 0) return false;
    native.free(DEVICE, p);
    this.#ptr[slot] = -1;
    return true;
  }

  /** Frees the slot's allocation, its reuse left waiting on the held stream (a free that a
   *  recorded request synchronized: ours must find it pending). */
  freePending(slot: number): boolean {
    const p = this.#ptr[slot]!;
    if (p < 0) return false;
    if (this.#blocker === 0) {
      this.#blocker = native.streamCreate(DEVICE);
      native.simHoldStream(DEVICE, this.#blocker, true);
    }
    native.recordStream(DEVICE, p, this.#blocker);
    native.free(DEVICE, p);
    this.#ptr[slot] = -1;
    this.#pending++;
    return true;
  }

  hasPending(): boolean {
    return this.#pending > 0;
  }

  /** The pending frees complete, as they had in the recording. */
  completePending(): void {
    if (this.#pending === 0) return;
    native.simCompleteStream(DEVICE, this.#blocker);
    native.streamSynchronize(DEVICE, this.#blocker);
    this.#pending = 0;
  }

  /** The next `count` device mallocs fail (after `afterBytes` more are mapped). */
  injectFailures(count: number, afterBytes: number): void {
    native.simFailNextMallocs(DEVICE, count, afterBytes);
    this.#injected = true;
  }

  /** After a request: an unused injected failure is dropped, pending frees complete. */
  settle(): void {
    if (this.#injected) {
      native.simFailNextMallocs(DEVICE, 0);
      this.#injected = false;
    }
    this.completePending();
  }

  /** Places a recorded start segment with its live blocks into `slots`; its base, or null
   *  when our allocator could not have made it (the caller allocates its blocks instead). */
  place(size: number, stream: number, pool: number, small: boolean, layout: Float64Array, slots: readonly number[]): number | null {
    let placed: Float64Array;
    try {
      placed = native.placeSegment(DEVICE, size, this.handle(stream), this.pool(pool), small, layout);
    } catch (err) {
      if (err instanceof InvalidArgumentError) return null;
      throw err;
    }
    slots.forEach((slot, k) => {
      this.#ptr[slot] = placed[k + 1]!;
    });
    return placed[0]!;
  }

  unplace(base: number): void {
    native.unplaceSegment(DEVICE, base);
  }

  /** What a request would do now, changing nothing (pool: ours, from knownPool). */
  plan(size: number, stream: number, pool: number): MallocPlan {
    return native.planMalloc(DEVICE, size, this.handle(stream), pool);
  }

  /** A recorded OOM's request tried again in an empty pool made for it and released after. */
  allocAndFreeAlone(size: number, stream: number): void {
    const n = native.poolCreate(DEVICE, false, false);
    const scratch = this.#ptr.length - 1;
    native.poolBegin(DEVICE, n);
    try {
      this.#ptr[scratch] = native.alloc(DEVICE, size, this.handle(stream));
      this.free(scratch);
    } finally {
      native.poolEnd(DEVICE, n);
      native.poolRelease(DEVICE, n);
    }
  }

  emptyCache(): void {
    native.emptyCache(DEVICE);
  }

  /** The program gave a MemPool up: its cached memory goes back. */
  releasePool(pool: number): void {
    const n = this.#pools.get(pool);
    if (n === undefined || this.#released.has(n)) return;
    native.poolRelease(DEVICE, n);
    this.#released.add(n);
  }

  reserved(): number {
    return native.statValue(DEVICE, this.#reservedAt);
  }

  stat(key: string): number {
    return native.statValue(DEVICE, this.#stat.get(key)!);
  }

  resetPeaks(): void {
    memory.reset_peak_memory_stats(DEVICE);
  }

  /** How usable the free part of our cache is now. */
  peakState(): PeakState {
    const [m] = readSamples();
    const free = m!.stat('reserved_bytes.all.current') - m!.stat('active_bytes.all.current');
    const largest = m!.largestFree('all');
    return { largestFreeBlock: largest, fragmentation: free > 0 ? 1 - Math.min(free, largest) / free : 0 };
  }

  /** Our segments of the default pools that hold nothing live, by recorded stream. */
  freeDefaultSegments(): FreeSegment[] {
    return memory.memory_snapshot().filter((g) => g.device === DEVICE && !g.is_expandable &&
      poolKey(g.segment_pool_id) === 0 && g.blocks.every((b) => b.state === 'inactive' || b.state === 'active_pending_free'))
      .map((g) => ({ small: g.segment_type === 'small', stream: this.recordedStream(g.stream), size: g.total_size, address: g.address }));
  }

  /** From here on our segment events are recorded, to compare with the recording's. */
  recordSegmentEvents(entries: number): void {
    memory._record_memory_history({
      enabled: 'all', context: null, maxEntries: Math.max(1000, 4 * entries),
      skipActions: ['alloc', 'free_requested', 'free_completed', 'snapshot', 'oom'],
    });
  }

  segmentEvents(): TraceEntry[] {
    return memory._snapshot().device_traces[DEVICE] ?? [];
  }

  /** Everything the replay made goes: the runtime is left empty. */
  dispose(): void {
    if (this.#injected) native.simFailNextMallocs(DEVICE, 0);
    for (let slot = 0; slot < this.#ptr.length; slot++) if (this.#ptr[slot]! >= 0) native.free(DEVICE, this.#ptr[slot]!);
    this.#ptr.fill(-1);
    for (const h of this.#streams.values()) native.streamDestroy(DEVICE, h);
    if (this.#blocker !== 0) native.streamDestroy(DEVICE, this.#blocker);
    for (const n of this.#pools.values()) if (!this.#released.has(n)) native.poolRelease(DEVICE, n);
    memory._record_memory_history(null);
  }
}
