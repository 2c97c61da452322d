// The two replay engines (lib/replay/engine.ts) are one allocator: the native addon's
// simulated device and the same C++ compiled to WebAssembly give equal reports on PyTorch's
// real files (every generated history of the replay tests is compared too: support/replay.ts),
// equal answers step by step on random sequences, and the wasm build's state stays valid
// after every step. Skipped, saying so, where emscripten is not installed (CI requires it).
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { CudaOutOfMemoryError, InvalidPointerError, replay, loadSnapshot } from '../../lib/index.js';
import type { WhatIfReport } from '../../lib/replay/what-if.js';
import { replayEngine, type EnginePort } from '../../lib/replay/engine.js';
import { wasmEngine } from '../../lib/replay/wasm-engine.js';
import { rng, wasmBuilt } from '../support/replay.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));
const GiB = 2 ** 30;
const MiB = 2 ** 20;

if (!wasmBuilt) console.log('replay-engines: the wasm engine is not built here (no emscripten): skipped');

describe.skipIf(!wasmBuilt)('the wasm engine replays as the native one does', () => {
  const pickles = readdirSync(FIXTURES).filter((f) => f.endsWith('.pickle'));
  it.each(pickles)('%s: equal reports under the recorded settings and two others', (file) => {
    const snap = loadSnapshot(join(FIXTURES, file));
    for (const settings of [undefined, 'expandable_segments:True', 'max_split_size_mb:64,garbage_collection_threshold:0.6']) {
      const native = replay.replayOnSim(snap, { settings, engine: 'native' });
      const wasm = replay.replayOnSim(snap, { settings, engine: 'wasm' });
      expect(wasm).toEqual(native);
      expect(native.entries).toBeGreaterThan(0);
    }
  });

  it('a small device (the recorded OOMs and more) gives equal reports too', () => {
    const snap = loadSnapshot(join(FIXTURES, 'pytorch-h100-streams.pickle'));
    const options = { capacityBytes: 300 * MiB };
    const native = replay.replayOnSim(snap, { ...options, engine: 'native' });
    expect(replay.replayOnSim(snap, { ...options, engine: 'wasm' })).toEqual(native);
    expect(native.oom).not.toBeNull();
  });

  it('what-if on both engines: the same rows, and the report says which ran', async () => {
    const file = join(FIXTURES, 'pytorch-h100-streams.pickle');
    const rows = (r: WhatIfReport) => r.rows.map(({ ms: _, ...row }) => row);
    const native = await replay.whatIf(file, { engine: 'native', workers: 2 });
    const wasm = await replay.whatIf(file, { engine: 'wasm', workers: 2 });
    expect([native.engine, wasm.engine]).toEqual(['native', 'wasm']);
    expect(rows(wasm)).toEqual(rows(native));
  });

  it('an unknown engine is refused by name, changing nothing', () => {
    const snap = loadSnapshot(join(FIXTURES, 'pytorch-h100-streams.pickle'));
    expect(() => replay.replayOnSim(snap, { engine: 'gpu' as never })).toThrow(
      expect.objectContaining({ code: 'ERR_CCA_INVALID_ENGINE', message: expect.stringContaining('"gpu"') }));
  });
});

describe.skipIf(!wasmBuilt)('the wasm engine on its own', () => {
  it('counts bytes past 4 GiB exactly (wasm32 has a 32-bit size_t; the core counts in 64 bits)', () => {
    const port = wasmEngine.open(80 * GiB, '');
    try {
      const keys = port.statKeys();
      const big = port.alloc(6 * GiB + 512, 0);
      const reserved = port.statValue(keys.indexOf('reserved_bytes.all.current'));
      expect(reserved).toBe(6 * GiB + 2 * MiB);  // one segment, rounded to 2 MiB
      expect(port.freeState()).toEqual({ reserved, active: 6 * GiB + 512, largestFree: 2 * MiB - 512 });
      expect(() => port.alloc(75 * GiB, 0)).toThrow(CudaOutOfMemoryError);
      port.free(big);
    } finally {
      port.close();
    }
  });

  it('throws the addon\'s error classes with their codes and numbers', () => {
    const port = wasmEngine.open(1 * GiB, '');
    try {
      const p = port.alloc(MiB, 0);
      port.free(p);
      expect(() => port.free(p)).toThrow(InvalidPointerError);
      let oom: CudaOutOfMemoryError | undefined;
      try {
        port.alloc(2 * GiB, 0);
      } catch (e) {
        oom = e as CudaOutOfMemoryError;
      }
      expect(oom).toBeInstanceOf(CudaOutOfMemoryError);
      expect(oom).toMatchObject({ code: 'ERR_CUDA_OUT_OF_MEMORY', requested: 2 * GiB, deviceTotal: GiB, device: 0 });
      expect(() => wasmEngine.checkSettings('bogus:1')).toThrow(expect.objectContaining({ code: 'ERR_CCA_INVALID_CONFIG' }));
    } finally {
      port.close();
    }
  });

  it('answers the size rules, the settings dict and the options table as the addon does', () => {
    const native = replayEngine('native');
    expect(wasmEngine.options()).toEqual(native.options());
    for (const settings of ['', 'roundup_power2_divisions:[256:1,512:2,>:8]', 'max_split_size_mb:64', 'expandable_segments:True']) {
      expect(wasmEngine.settingsDict(settings)).toEqual(native.settingsDict(settings));
      for (const size of [1, 512, MiB, MiB + 1, 7 * MiB, 300 * MiB + 3, 5 * GiB + 7]) {
        expect(wasmEngine.sizePolicy(settings, size)).toEqual(native.sizePolicy(settings, size));
      }
    }
  });
});

// Random allocs, frees, streams, record_stream, held streams, cache releases and dry runs on
// both engines at once: every answer equal (stream handles are each engine's own), and both
// states valid after every step.
function randomSequence(seed: number, steps: number, settings: string): void {
  const rand = rng(seed);
  const engines = [replayEngine('native').open(4 * GiB, settings), wasmEngine.open(4 * GiB, settings)] as const;
  const [native, wasm] = engines;
  // Runs f on each engine with that engine's handles; equal outcomes, or the test fails.
  const both = <T>(f: (p: EnginePort, side: 0 | 1) => T, compare = true): [T, T] | null => {
    const a = attempt(() => f(native, 0));
    const b = attempt(() => f(wasm, 1));
    if (compare || 'error' in a || 'error' in b) expect(b).toEqual(a);
    return 'error' in a || 'error' in b ? null : [a.value, b.value];
  };
  const live: number[] = [];
  const streams: [number, number][] = [[0, 0]];
  const pick = <T>(xs: T[]) => xs[Math.floor(rand() * xs.length)]!;
  const keys = native.statKeys();
  try {
    for (let step = 0; step < steps; step++) {
      const r = rand();
      if (r < 0.45 || live.length === 0) {
        const size = rand() < 0.6 ? Math.ceil(rand() * MiB) : Math.ceil(rand() * 200 * MiB);
        const s = pick(streams);
        const got = both((p, side) => p.alloc(size, s[side]));
        if (got) live.push(got[0]);
      } else if (r < 0.8) {
        const ptr = live.splice(Math.floor(rand() * live.length), 1)[0]!;
        both((p) => p.free(ptr));
      } else if (r < 0.86) {
        const ptr = pick(live);
        const s = pick(streams);
        both((p, side) => p.recordStream(ptr, s[side]));
      } else if (r < 0.9 && streams.length < 4) {
        const made = both((p) => p.streamCreate(), false);
        if (made) streams.push(made);
      } else if (r < 0.93 && streams.length > 1) {
        const s = pick(streams.slice(1));
        const held = rand() < 0.5;
        both((p, side) => p.holdStream(s[side], held));
      } else if (r < 0.96) {
        both((p) => p.emptyCache());
      } else {
        const size = Math.ceil(rand() * 64 * MiB);
        both((p) => p.planMalloc(size, 0, 0));
      }
      for (const key of ['reserved_bytes.all.current', 'active_bytes.all.current', 'requested_bytes.all.current', 'num_device_alloc']) {
        const i = keys.indexOf(key);
        expect(wasm.statValue(i)).toBe(native.statValue(i));
      }
      expect(wasm.validate()).toBe('');
      expect(native.validate()).toBe('');
    }
  } finally {
    for (const s of streams.slice(1)) both((p, side) => p.holdStream(s[side], false));
    for (const ptr of live) both((p) => p.free(ptr));
    for (const s of streams.slice(1)) both((p, side) => p.streamDestroy(s[side]));
    native.close();
    wasm.close();
  }
}

const attempt = <T>(f: () => T): { value: T } | { error: string } => {
  try {
    return { value: f() };
  } catch (e) {
    return { error: `${(e as Error).constructor.name} ${(e as { code?: string }).code}` };
  }
};

describe.skipIf(!wasmBuilt)('random sequences on both engines', () => {
  it.each([1, 2, 3])('seed %i: equal answers, and the wasm state valid after every step', (seed) => {
    randomSequence(seed, 1500, seed === 2 ? 'expandable_segments:True' : 'max_split_size_mb:32');
  });
});
