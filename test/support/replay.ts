// Record a history on the simulator and replay it; what "exact" means for a replay. Shared by
// the replay tests.
import { expect } from 'vitest';
import { CudaOutOfMemoryError, replay, cuda, memory, type DeviceBuffer } from '../../lib/index.js';
import type { Snapshot } from '../../lib/snapshot/types.js';
import { wasmEnginePath } from '../../lib/replay/wasm-engine.js';

/**
 * Whether the wasm engine is built here. Without emscripten it is not, and the engines'
 * comparisons below are left out (the wasm tests say so); CI installs emscripten and sets
 * CCA_REQUIRE_WASM=1, so there a missing engine fails instead.
 */
export const wasmBuilt = ((): boolean => {
  const built = wasmEnginePath() !== null;
  if (!built && process.env.CCA_REQUIRE_WASM === '1') throw new Error('CCA_REQUIRE_WASM=1 but dist/wasm/cca-engine.cjs is not built');
  return built;
})();

/** Replays on the native engine and, where it is built, on the wasm one too: the reports must be equal. */
export function replayOnBoth(snap: Snapshot, options: Parameters<typeof replay.replayOnSim>[1] = {}) {
  const report = replay.replayOnSim(snap, { ...options, engine: 'native' });
  if (wasmBuilt) expect(replay.replayOnSim(snap, { ...options, engine: 'wasm' })).toEqual(report);
  return report;
}

export interface Recording {
  capacity?: number;
  settings?: string;
  maxEntries?: number;
  /** Work done before history starts: a warm cache. Returns what it keeps. */
  before?: () => DeviceBuffer[];
  run: () => DeviceBuffer[];
}

export function recordAndReplay(r: Recording, edit?: (s: Snapshot) => void) {
  cuda.sim.configure({ capacityBytes: r.capacity ?? 16 * 2 ** 30 });
  memory._set_allocator_settings(r.settings ?? '');
  const before = r.before?.() ?? [];
  memory._record_memory_history({ enabled: 'all', context: null, maxEntries: r.maxEntries ?? 1_000_000 });
  const kept = r.run();
  const snap = memory._snapshot();
  memory._record_memory_history(null);
  for (const b of [...before, ...kept]) if (!b.disposed) b.free();
  memory._set_allocator_settings('');
  edit?.(snap);
  return { snap, report: replayOnBoth(snap) };
}

export function expectExact({ report }: ReturnType<typeof recordAndReplay>): void {
  expect(report.oom).toBeNull();
  expect(report.firstDivergence).toBeNull();
  expect(report.segmentEvents.firstMismatch).toBeNull();
  expect(report.segmentEvents.ours).toBe(report.segmentEvents.recorded);
  expect(report.ours.segmentGrowths).toBe(report.recorded.segmentGrowths);
  expect(report.ours.segmentShrinks).toBe(report.recorded.segmentShrinks);
  expect(report.ours.peakReserved - report.ours.startReserved).toBe(report.recorded.peakReserved - report.recorded.startReserved);
  expect(report.ours.endReserved - report.ours.startReserved).toBe(report.recorded.endReserved - report.recorded.startReserved);
  expect(report.ooms.reproduced).toBe(report.ooms.recorded);
  expect(report.unknownFrees).toBe(0);
}

export const tryAlloc = (size: number, options?: Parameters<typeof cuda.alloc>[1]): DeviceBuffer | null => {
  try {
    return cuda.alloc(size, options);
  } catch (e) {
    if (!(e instanceof CudaOutOfMemoryError)) throw e;
    return null;
  }
};

/** A small seeded generator (mulberry32): the same history for the same seed. */
export function rng(seed: number) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
