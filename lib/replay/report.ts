// What a replay reports: both sides' reserved memory, where they first parted and why, and
// how the history's start and its releases were read.
import type { SegmentEventComparison } from './reading.js';
import type { EngineName } from './engine.js';

export interface ReplaySide {
  /** Reserved bytes when the history begins (ours: after the inferred live set is allocated). */
  startReserved: number;
  peakReserved: number;
  endReserved: number;
  /** segment_alloc + segment_map events during the history (ours: after the start). */
  segmentGrowths: number;
  /** segment_free + segment_unmap events during the history. */
  segmentShrinks: number;
}

/** Our cache when reserved memory peaked: how usable its free part was then. */
export interface PeakState {
  largestFreeBlock: number;
  /** 1 - largest free block / free cached bytes (0: one piece). */
  fragmentation: number;
}

export interface ReplayReport {
  device: number;
  settings: string;
  capacityBytes: number;
  entries: number;
  allocs: number;
  frees: number;
  /** Frees of addresses the history never allocated and the final state does not explain. */
  unknownFrees: number;
  /** Allocations made in private pools (MemPools), replayed into a MemPool per recorded id. */
  poolAllocs: number;
  /** Set when the trace named no pool (PyTorch's files) and private pools were read from its
   *  releases (pools.ts): how many, and how many allocations went to them. */
  inferredPools: { pools: number; allocs: number } | null;
  /** Runs of segment frees: empty_cache() calls, MemPools' ends, and releases inside a request
   *  (before its retry or OOM), each replayed as what it was read to be. */
  cacheReleases: number;
  initialLive: { count: number; bytes: number };
  /** Segments rebuilt as free cache before the first entry: there at the start, holding nothing live. */
  initialFreeSegments: number;
  /** How the start was rebuilt: `segments` placed as recorded (free ones included) holding
   *  `placed` live blocks at their offsets, `sizedFromRequest` of them sized from their
   *  request (freed during the history, so the final state does not show their block);
   *  `allocated`: live allocations made by allocating, in address order (in no known
   *  segment, or with expandable segments, which are not placed). `lostSegmentAlloc`: the
   *  ring began inside a request, after its segment_alloc; that segment is counted as made by
   *  the first entry, on both sides. */
  start: { segments: number; placed: number; sizedFromRequest: number; allocated: number; lostSegmentAlloc: boolean };
  /** The segment events (alloc/free/map/unmap and their sizes) in order, ours against the
   *  recording's: equal when `firstMismatch` is null. */
  segmentEvents: SegmentEventComparison;
  recorded: ReplaySide;
  ours: ReplaySide;
  /** Ours, after the first allocation that left reserved memory at its highest (a peak
   *  inside a request, counted in `ours.peakReserved`, is not sampled). */
  oursAtPeak: PeakState;
  /** The first entry after which reserved growth since the start differs, or null. */
  firstDivergence: {
    index: number; action: string; recordedGrowth: number; ourGrowth: number;
    /** Why, as far as the replay can tell: the release replayed just before, or the request's outcome. */
    reason: string;
  } | null;
  /** The recorded OOMs, and how many our allocator also hit at the same point with the same
   *  request (the replay goes on after each, as the program did). */
  ooms: { recorded: number; reproduced: number; notReproducedAt: number[] };
  /** Set when our allocator ran out of the simulated capacity; the replay stopped there (index
   *  -1: the state the history started from did not fit). */
  oom: { index: number; size: number; message: string } | null;
}

export interface ReplayOptions {
  device?: number;
  /** Simulated device memory. Default: the recorded device's total where an OOM entry tells it
   *  (its free bytes plus the reserved ones then), else 256 GiB, so only the policy limits growth. */
  capacityBytes?: number;
  /** Allocator settings (PYTORCH_CUDA_ALLOC_CONF syntax); default: the snapshot's own. */
  settings?: string;
  /** Called every `every` entries with (done, total). */
  onProgress?: (done: number, total: number) => void;
  /** Which allocator replays: the native addon's simulated device, or the same C++ compiled to
   *  WebAssembly. Default: native where the addon loads, else wasm. The reports are equal. */
  engine?: EngineName;
  /** @internal Filled with our reserved bytes after each entry (the viewer draws it); the
   *  entries after a stop are left as they were. Not for replayOnSim (its options refuse it). */
  series?: Float64Array;
}
