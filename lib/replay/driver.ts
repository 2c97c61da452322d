// A replay's simulated device, over either engine (engine.ts): the replay's bookkeeping,
// the same whichever engine runs it. It owns our streams and MemPools for the recorded ones,
// every live allocation's pointer by slot (recording.ts numbers them), the held stream that
// keeps a request's frees pending, and an injected device failure. Plain numbers
// throughout: a million-entry replay makes no DeviceBuffer, Stream or MemPool object, and
// dispose() leaves the engine empty whatever happened.
import { InvalidArgumentError } from '../errors.js';
import type { TraceEntry } from '../snapshot/types.js';
import type { PeakState } from './report.js';
import type { FreeSegment } from './reading.js';
import type { EnginePort, MallocPlan, ReplayEngine } from './engine-types.js';

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
  readonly #port: EnginePort;
  /** A held stream: frees recorded on it stay pending until completePending(). */
  #blocker = 0;
  #pending = 0;
  #injected = false;

  /**
   * A fresh simulated device of `capacityBytes` under `settings` on `engine`, with `slots`
   * allocation slots and our streams made for `streams` (recorded ids, made in that order:
   * free blocks are ordered by stream, so releases keep the recorded order).
   */
  constructor(engine: ReplayEngine, capacityBytes: number, settings: string, slots: number, streams: readonly number[]) {
    this.#port = engine.open(capacityBytes, settings);
    this.#ptr = new Float64Array(slots).fill(-1);
    this.#stat = new Map(this.#port.statKeys().map((k, i) => [k, i]));
    this.#reservedAt = this.#stat.get('reserved_bytes.all.current')!;
    for (const id of streams) this.handle(id);
  }

  /** The active settings, as PyTorch's dict. */
  settings(): Record<string, unknown> {
    return this.#port.settings();
  }

  /** Our stream for a recorded one (0: the default stream), made on first use. */
  handle(stream: number): number {
    if (stream === 0) return 0;
    let h = this.#streams.get(stream);
    if (h === undefined) {
      h = this.#port.streamCreate();
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
      n = this.#port.poolCreate();
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
      this.#ptr[slot] = this.#port.alloc(size, handle);
      return;
    }
    const n = this.pool(pool);
    this.#port.poolBegin(n);
    try {
      this.#ptr[slot] = this.#port.alloc(size, handle);
    } finally {
      this.#port.poolEnd(n);
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
    this.#port.free(p);
    this.#ptr[slot] = -1;
    return true;
  }

  /** Frees the slot's allocation, its reuse left waiting on the held stream (a free that a
   *  recorded request synchronized: ours must find it pending). */
  freePending(slot: number): boolean {
    const p = this.#ptr[slot]!;
    if (p < 0) return false;
    if (this.#blocker === 0) {
      this.#blocker = this.#port.streamCreate();
      this.#port.holdStream(this.#blocker, true);
    }
    this.#port.recordStream(p, this.#blocker);
    this.#port.free(p);
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
    this.#port.completeStream(this.#blocker);
    this.#port.streamSynchronize(this.#blocker);
    this.#pending = 0;
  }

  /** The next `count` device mallocs fail (after `afterBytes` more are mapped). */
  injectFailures(count: number, afterBytes: number): void {
    this.#port.failNextMallocs(count, afterBytes);
    this.#injected = true;
  }

  /** After a request: an unused injected failure is dropped, pending frees complete. */
  settle(): void {
    if (this.#injected) {
      this.#port.failNextMallocs(0, 0);
      this.#injected = false;
    }
    this.completePending();
  }

  /** Places a recorded start segment with its live blocks into `slots`; its base, or null
   *  when our allocator could not have made it (the caller allocates its blocks instead). */
  place(size: number, stream: number, pool: number, small: boolean, layout: Float64Array, slots: readonly number[]): number | null {
    let placed: Float64Array;
    try {
      placed = this.#port.placeSegment(size, this.handle(stream), this.pool(pool), small, layout);
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
    this.#port.unplaceSegment(base);
  }

  /** What a request would do now, changing nothing (pool: ours, from knownPool). */
  plan(size: number, stream: number, pool: number): MallocPlan {
    return this.#port.planMalloc(size, this.handle(stream), pool);
  }

  /** A recorded OOM's request tried again in an empty pool made for it and released after. */
  allocAndFreeAlone(size: number, stream: number): void {
    const n = this.#port.poolCreate();
    const scratch = this.#ptr.length - 1;
    this.#port.poolBegin(n);
    try {
      this.#ptr[scratch] = this.#port.alloc(size, this.handle(stream));
      this.free(scratch);
    } finally {
      this.#port.poolEnd(n);
      this.#port.poolRelease(n);
    }
  }

  emptyCache(): void {
    this.#port.emptyCache();
  }

  /** The program gave a MemPool up: its cached memory goes back. */
  releasePool(pool: number): void {
    const n = this.#pools.get(pool);
    if (n === undefined || this.#released.has(n)) return;
    this.#port.poolRelease(n);
    this.#released.add(n);
  }

  reserved(): number {
    return this.#port.statValue(this.#reservedAt);
  }

  stat(key: string): number {
    return this.#port.statValue(this.#stat.get(key)!);
  }

  resetPeaks(): void {
    this.#port.resetPeaks();
  }

  /** How usable the free part of our cache is now. */
  peakState(): PeakState {
    const { reserved, active, largestFree: largest } = this.#port.freeState();
    const free = reserved - active;
    return { largestFreeBlock: largest, fragmentation: free > 0 ? 1 - Math.min(free, largest) / free : 0 };
  }

  /** Our segments of the default pools that hold nothing live, by recorded stream. */
  freeDefaultSegments(): FreeSegment[] {
    return this.#port.emptyDefaultSegments().map((g) => ({ ...g, stream: this.recordedStream(g.stream) }));
  }

  /** From here on our segment events are recorded, to compare with the recording's. */
  recordSegmentEvents(entries: number): void {
    this.#port.recordSegmentEvents(Math.max(1000, 4 * entries));
  }

  segmentEvents(): TraceEntry[] {
    return this.#port.segmentEvents();
  }

  /** Everything the replay made goes: the engine is left empty. */
  dispose(): void {
    if (this.#injected) this.#port.failNextMallocs(0, 0);
    for (let slot = 0; slot < this.#ptr.length; slot++) if (this.#ptr[slot]! >= 0) this.#port.free(this.#ptr[slot]!);
    this.#ptr.fill(-1);
    for (const h of this.#streams.values()) this.#port.streamDestroy(h);
    if (this.#blocker !== 0) this.#port.streamDestroy(this.#blocker);
    for (const n of this.#pools.values()) if (!this.#released.has(n)) this.#port.poolRelease(n);
    this.#port.close();
  }
}
