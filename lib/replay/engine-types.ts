// The seam between replay and the allocator it replays on, as types: what a replay asks of
// an engine (EnginePort) and what an engine offers (ReplayEngine). engine.ts chooses one;
// the engines (native-engine.ts, wasm-port.ts) implement these and import nothing back.
import type { TraceEntry } from '../snapshot/types.js';
import type { AllocatorOptionRow } from '../../binding.js';

export type EngineName = 'native' | 'wasm';
export const ENGINE_NAMES: readonly EngineName[] = ['native', 'wasm'];

/** What a request would do now, changing nothing: the cached block it would take, and its fallbacks. */
export interface MallocPlan {
  cached: { ptr: number; size: number } | null;
  limited: boolean;
  limitReleases: boolean;
  oversizeSizes: number[];
  oversizeRetries: boolean;
}

/**
 * The calls a replay makes of its engine, on the one device of a fresh simulated runtime:
 * streams, MemPools, allocations, the simulator's controls and the read-only questions.
 * Handles and pointers are the engine's own numbers. SimDriver (driver.ts) keeps the replay's
 * bookkeeping over it, the same for both engines.
 */
export interface EnginePort {
  /** The active settings, as PyTorch's dict. */
  settings(): Record<string, unknown>;
  streamCreate(): number;
  streamDestroy(stream: number): void;
  streamSynchronize(stream: number): void;
  poolCreate(): number;
  poolBegin(pool: number): void;
  poolEnd(pool: number): void;
  poolRelease(pool: number): void;
  /** Throws CudaOutOfMemoryError when it does not fit. */
  alloc(size: number, stream: number): number;
  free(ptr: number): void;
  recordStream(ptr: number, stream: number): void;
  emptyCache(): void;
  /** The simulator: a held stream's work does not complete until completeStream. */
  holdStream(stream: number, held: boolean): void;
  completeStream(stream: number): void;
  /** The next `count` device mallocs fail (after `afterBytes` more are mapped); 0 clears. */
  failNextMallocs(count: number, afterBytes: number): void;
  /** [segment, ...live blocks] addresses; InvalidArgumentError for a layout our allocator
   *  could not have made. */
  placeSegment(size: number, stream: number, pool: number, small: boolean, layout: Float64Array): Float64Array;
  unplaceSegment(base: number): void;
  planMalloc(size: number, stream: number, pool: number): MallocPlan;
  /** memory_stats()'s keys, in the order statValue numbers them. */
  statKeys(): readonly string[];
  statValue(index: number): number;
  resetPeaks(): void;
  /** Reserved and active bytes, and the largest free cached block. */
  freeState(): { reserved: number; active: number; largestFree: number };
  /** Segments of the default pools, not expandable, that hold nothing live (stream: ours). */
  emptyDefaultSegments(): { small: boolean; stream: number; size: number; address: number }[];
  /** From here on segment events are kept (at most `maxEntries`), nothing else. */
  recordSegmentEvents(maxEntries: number): void;
  segmentEvents(): TraceEntry[];
  /** The invariant validator's findings ('' when the state is sound; tests). */
  validate(): string;
  /** Everything goes: the engine is left empty. */
  close(): void;
}

export interface ReplayEngine {
  readonly name: EngineName;
  /** The block size and segment size a request gets under `settings`. */
  sizePolicy(settings: string, size: number): { rounded: number; segment: number };
  /** PyTorch's allocator_settings dict for a config string. */
  settingsDict(settings: string): Record<string, unknown>;
  /** Refuses a bad config string with the parser's coded error. */
  checkSettings(settings: string): void;
  /** The options table's rows, in order (native/allocator/policy/options.h). */
  options(): AllocatorOptionRow[];
  /** A fresh simulated device of `capacityBytes` under `settings` (the native engine refuses
   *  while the caller's runtime has memory allocated: replay replaces it). */
  open(capacityBytes: number, settings: string): EnginePort;
}
