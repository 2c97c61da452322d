// frag, diff and leaks: on PyTorch's fixture (numbers checked against the blocks) and on
// histories recorded here with a known leak, a one-time allocation and annotated steps.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeEach, describe, expect, it } from 'vitest';
import { type DeviceBuffer, Stream, cuda, loadSnapshot, memory } from '../../lib/index.js';
import { fragmentation, blockMap } from '../../lib/analysis/fragmentation.js';
import { diffSnapshots, regionWindows } from '../../lib/analysis/diff.js';
import { findLeaks } from '../../lib/analysis/leaks.js';
import { replayOnSim } from '../../lib/replay/replay.js';
import { timeline } from '../../lib/analysis/timeline.js';
import { summarize } from '../../lib/analysis/summary.js';
import type { Snapshot } from '../../lib/snapshot/types.js';
import { writeSnapshotFile } from '../../lib/snapshot/dump.js';
import { replayOnBoth } from '../support/replay.js';
import { KiB, MiB, freshSim } from '../support/helpers.js';
import { tempDir } from '../support/temp-dir.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/pytorch-resnet50-snapshot.pickle', import.meta.url));
const CLI = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const dir = tempDir('cca-analysis-');

beforeEach(() => {
  freshSim();
  memory._record_memory_history(null);
});

describe('frag on PyTorch\'s fixture', () => {
  it('accounts for every free byte', () => {
    const snap = loadSnapshot(FIXTURE);
    const [r] = fragmentation(snap);
    let free = 0;
    let largest = 0;
    let releasable = 0;
    let squares = 0;
    for (const s of snap.segments) {
      const inactive = s.blocks.filter((b) => b.state === 'inactive');
      const bytes = inactive.reduce((n, b) => n + b.size, 0);
      squares += inactive.reduce((n, b) => n + b.size * b.size, 0);
      free += bytes;
      largest = Math.max(largest, ...inactive.map((b) => b.size));
      if (inactive.length === s.blocks.length) releasable += bytes;
    }
    expect(r!.reserved).toBe(589299712);
    expect(r!.allocated).toBe(225240576);
    expect(r!.free).toBe(free);
    expect(r!.free).toBe(r!.reserved - snap.segments.flatMap((s) => s.blocks).filter((b) => b.state !== 'inactive')
      .reduce((n, b) => n + b.size, 0));
    expect(r!.largestFree).toBe(largest);
    expect(summarize(snap)[0]!.largestFreeBlock).toBe(largest);  // cca summary reports the same
    expect(r!.releasable).toBe(releasable);
    expect(r!.releasable + r!.stranded).toBe(r!.free);
    expect(r!.pools.small.reserved + r!.pools.large.reserved).toBe(r!.reserved);
    expect(r!.external).toBeCloseTo(1 - largest / free, 12);
    expect(r!.scatter).toBeCloseTo(1 - squares / (free * free), 12);
    expect(r!.scatter).toBeGreaterThan(0);
    expect(r!.scatter).toBeLessThan(1);
    expect(r!.segments.map((s) => s.free)).toEqual([...r!.segments.map((s) => s.free)].sort((a, b) => b - a));
  });
});

describe('blockMap', () => {
  it('draws allocated, pending and free by the bytes that cover each cell', () => {
    const seg = {
      address: 0, total_size: 8 * KiB,
      blocks: [
        { address: 0, size: 2 * KiB, state: 'active_allocated' },
        { address: 2 * KiB, size: 1 * KiB, state: 'active_pending_free' },
        { address: 3 * KiB, size: 5 * KiB, state: 'inactive' },
      ],
    } as unknown as Snapshot['segments'][number];
    expect(blockMap(seg, 8)).toBe('##~.....');
    expect(blockMap(seg, 4)).toBe('#~..');
  });
});

/** Five annotated steps: each allocates a temporary (freed), leaks 64 KiB from one helper,
 *  and the first also makes a 2 MiB buffer kept for good (optimizer-state style). */
function recordSteps(steps: number, snapshotsAfter: number[]): Snapshot[] {
  memory._record_memory_history({ enabled: 'all', context: 'all', maxEntries: 100_000 });
  const kept: DeviceBuffer[] = [];
  const leakOne = () => kept.push(cuda.alloc(64 * KiB, { tag: 'cache' }));
  const state = (): DeviceBuffer => cuda.alloc(2 * MiB, { tag: 'state' });
  const out: Snapshot[] = [];
  for (let step = 1; step <= steps; step++) {
    memory.annotate('step', () => {
      const tmp = cuda.alloc(3 * MiB, { tag: 'activations' });
      leakOne();
      if (step === 1) kept.push(state());
      memory.annotate('forward', () => cuda.alloc(KiB).free());
      tmp.free();
    });
    if (snapshotsAfter.includes(step)) out.push(memory._snapshot());
  }
  return out;
}

describe('leaks', () => {
  it('flags the stack that leaves an allocation behind every step, not the one-time state', () => {
    const [snap] = recordSteps(5, [5]);
    const r = findLeaks(snap!);
    expect(r.marker).toBe('step');  // 'forward' also starts 5 times, but inside each step
    expect(r.steps).toBe(5);
    // Survivors of 2+ later markers: made in steps 1..3.
    const grows = r.groups.filter((g) => g.growing);
    expect(grows).toHaveLength(1);
    expect(grows[0]).toMatchObject({ count: 3, bytes: 3 * 64 * KiB, steps: 3, firstStep: 1, lastStep: 3 });
    expect(grows[0]!.key).toContain('leakOne');
    const once = r.groups.filter((g) => !g.growing);
    expect(once).toHaveLength(1);
    expect(once[0]).toMatchObject({ count: 1, bytes: 2 * MiB, steps: 1, firstStep: 1 });
    expect(once[0]!.key).toContain('state');
    expect(r.survivors).toEqual({ count: 4, bytes: 3 * 64 * KiB + 2 * MiB });
    expect(r.olderThanHistory.count).toBe(0);
    // Stricter: only what outlived 4 markers (step 1's).
    const strict = findLeaks(snap!, { minSteps: 4 });
    expect(strict.survivors.count).toBe(2);
    expect(strict.groups.every((g) => !g.growing)).toBe(true);
  });

  it('an unknown marker names the ones present', () => {
    const [snap] = recordSteps(2, [2]);
    expect(() => findLeaks(snap!, { marker: 'epoch' })).toThrow(/no annotation named 'epoch'.*step/);
    try {
      findLeaks(snap!, { marker: 'epoch' });
    } catch (e) {
      expect((e as { code?: string }).code).toBe('ERR_CCA_UNKNOWN_MARKER');
    }
  });

  it('without markers it lists what the history allocated and is still live', () => {
    memory._record_memory_history({ enabled: 'all', context: 'all' });
    const old = cuda.alloc(KiB);
    old.free();
    const live = cuda.alloc(5 * KiB);
    const r = findLeaks(memory._snapshot());
    expect(r.marker).toBeNull();
    expect(r.survivors).toEqual({ count: 1, bytes: live.size });
  });
});

describe('diff', () => {
  it('shows the growth per stack, per tag and per region between two points of a run', () => {
    const [a, b] = recordSteps(5, [2, 5]);
    const d = diffSnapshots(a!, b!);
    expect(d.allocatedB - d.allocatedA).toBe(3 * 64 * KiB);
    expect(d.byStack).toHaveLength(1);
    expect(d.byStack[0]).toMatchObject({ countA: 2, countB: 5, deltaCount: 3, deltaBytes: 3 * 64 * KiB });
    expect(d.byStack[0]!.key).toContain('leakOne');
    expect(d.byTag).toEqual([{ key: 'cache', countA: 2, bytesA: 128 * KiB, countB: 5, bytesB: 320 * KiB, deltaCount: 3, deltaBytes: 192 * KiB }]);
    const step = d.byRegion.find((r) => r.name === 'step')!;
    expect(step.a.runs).toBe(2);
    expect(step.b.runs).toBe(5);
    // Per step: 3 MiB + 64 KiB + 1 KiB allocated (2 MiB more in step 1); 3 MiB + 1 KiB freed.
    const perStep = 3 * MiB + 64 * KiB + 1024;
    expect(step.b.allocated).toBe(5 * perStep + 2 * MiB);
    expect(step.b.freed).toBe(5 * (3 * MiB + 1024));
    expect(step.deltaNet).toBe(3 * 64 * KiB);
    const forward = d.byRegion.find((r) => r.name === 'forward')!;
    expect(forward.b).toEqual({ runs: 5, allocated: 5 * 1024, freed: 5 * 1024 });
    expect(forward.deltaNet).toBe(0);
  });

  it('pairs START and END per name, nested or open', () => {
    const w = regionWindows([
      { device: 0, name: 'a', stage: 'START', time_us: 1 },
      { device: 0, name: 'a', stage: 'START', time_us: 2 },
      { device: 0, name: 'a', stage: 'END', time_us: 3 },
      { device: 0, name: 'a', stage: 'END', time_us: 4 },
      { device: 1, name: 'a', stage: 'START', time_us: 5 },
      { device: 0, name: 'b', stage: 'END', time_us: 6 },
      { device: 0, name: 'c', stage: 'START', time_us: 7 },
    ], 0);
    expect(w.get('a')).toEqual([[2, 3], [1, 4]]);
    expect(w.has('b')).toBe(false);
    expect(w.get('c')).toEqual([[7, Infinity]]);
  });
});

describe('cca frag / diff / leaks', () => {
  const cca = (...args: string[]) => execFileSync(process.execPath, [CLI, ...args], { encoding: 'utf8' });

  it('run on dumped files, as text and as JSON', () => {
    const [a, b] = recordSteps(5, [2, 5]);
    const fa = join(dir, 'a.pickle');
    const fb = join(dir, 'b.json');
    writeSnapshotFile(a!, fa, 'pickle');
    writeSnapshotFile(b!, fb, 'json');
    expect(cca('leaks', fb)).toMatch(/GROWS\s+192\.00 KiB in\s+3 allocations from 3 steps \(1\.\.3\)/);
    expect(JSON.parse(cca('leaks', fb, '--json', '--min-steps', '4')).survivors.count).toBe(2);
    const diff = cca('diff', fa, fb);
    expect(diff).toMatch(/allocated .* \(\+192\.00 KiB\)/);
    expect(diff).toContain('leakOne');
    expect(JSON.parse(cca('diff', fa, fb, '--json')).byTag[0].key).toBe('cache');
    const frag = cca('frag', fb);
    expect(frag).toMatch(/largest free block/);
    expect(JSON.parse(cca('frag', fb, '--json'))[0].reserved).toBe(b!.segments.reduce((n, s) => n + s.total_size, 0));
  });

  it('a bad marker is a one-line error with its code', () => {
    const [snap] = recordSteps(2, [2]);
    const f = join(dir, 's.pickle');
    writeSnapshotFile(snap!, f, 'pickle');
    const r = spawnSync(process.execPath, [CLI, 'leaks', f, '--marker', 'epoch'], { encoding: 'utf8' });
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(/^cca: no annotation named 'epoch'.*\(ERR_CCA_UNKNOWN_MARKER\)\n$/);
  });
});

describe('replay', () => {
  /** A workload with two streams, splits, merges, large and oversize-ish requests. */
  function workload(): Snapshot {
    const side = Stream.create();
    const keep: DeviceBuffer[] = [];
    for (let i = 0; i < 40; i++) {
      const a = cuda.alloc(1000 + 37 * i);
      const b = cuda.alloc((1 + (i % 7)) * MiB + 512 * i, { stream: i % 3 === 0 ? side : undefined });
      const c = cuda.alloc(12 * MiB + 4096 * i);
      if (i % 4 === 0) keep.push(a);
      else a.free();
      b.free();
      if (i % 5 === 0) keep.push(c);
      else c.free();
    }
    const snap = memory._snapshot();
    for (const b of keep) b.free();
    side.destroy();
    return snap;
  }

  for (const settings of ['', 'expandable_segments:True']) {
    it(`reproduces our own recording exactly (${settings || 'default settings'})`, () => {
      memory._set_allocator_settings(settings);
      memory._record_memory_history({ enabled: 'all', context: null, maxEntries: 100_000 });
      const snap = workload();
      memory._record_memory_history(null);
      memory._set_allocator_settings('');
      const r = replayOnBoth(snap);
      expect(r.settings).toBe(settings);
      expect(r.initialLive.count).toBe(0);
      expect(r.unknownFrees).toBe(0);
      expect(r.allocs).toBe(120);
      expect(r.recorded.segmentGrowths).toBeGreaterThan(3);
      expect(r.ours).toEqual(r.recorded);
      expect(r.firstDivergence).toBeNull();
      expect(r.oom).toBeNull();
      expect(memory.check_invariants()).toBeNull();
    });
  }

  it('under other settings, names the first entry where reserved memory parts, and why', () => {
    memory._record_memory_history({ enabled: 'all', context: null, maxEntries: 100_000 });
    const snap = workload();
    memory._record_memory_history(null);
    // Rounded to half powers of two, the 12 MiB + 4 KiB requests take bigger segments than recorded.
    const r = replayOnBoth(snap, { settings: 'roundup_power2_divisions:2' });
    expect(r.firstDivergence).not.toBeNull();
    const f = r.firstDivergence!;
    expect(snap.device_traces[0]![f.index]!.action).toBe(f.action);
    expect(f.ourGrowth).not.toBe(f.recordedGrowth);
    expect(f.reason).toMatch(/^at this alloc the recording's reserved memory (grew by|did not change).*, ours (grew by|did not change)/);
    const file = join(tempDir('cca-replay-why-'), 'run.pickle');
    writeSnapshotFile(snap, file);
    const text = execFileSync(process.execPath, [CLI, 'replay', file, '--settings', 'roundup_power2_divisions:2'], { encoding: 'utf8' });
    expect(text).toContain(`first difference at entry ${f.index} (alloc)`);
    expect(text).toContain(`    why: ${f.reason}`);
  });

  it('infers the live set of a history that began on a warm cache, and stops at an OOM', () => {
    const warm = cuda.alloc(5 * MiB);
    const old = cuda.alloc(3000);
    memory._record_memory_history({ enabled: 'all', context: null });
    old.free();                       // freed in the history, allocated before it
    const fresh = cuda.alloc(64 * MiB);
    const snap = memory._snapshot();
    memory._record_memory_history(null);
    warm.free();
    fresh.free();
    const r = replayOnBoth(snap, { capacityBytes: 40 * MiB });
    expect(r.initialLive).toEqual({ count: 2, bytes: 5 * MiB + 3000 });
    expect(r.oom).toMatchObject({ index: 3, size: 64 * MiB });
    expect(r.oom!.message).toContain('Tried to allocate 64.00 MiB');
  });

  it('refuses to replace a runtime that still holds memory', () => {
    const held = cuda.alloc(4096);
    expect(() => replayOnSim({ segments: [], device_traces: [[]] })).toThrow(/device 0 still has 4096 bytes allocated/);
    expect(held.ptr).toBeGreaterThan(0);
    expect(memory.memory_allocated()).toBe(4096);
    held.free();
  });

  it('replays PyTorch\'s fixture from its inferred starting state', () => {
    const r = replayOnBoth(loadSnapshot(FIXTURE));
    expect(r.entries).toBe(6111);
    expect(r.allocs).toBe(2037);
    expect(r.frees).toBe(2037);
    expect(r.unknownFrees).toBe(0);
    expect(r.initialLive.count).toBe(486);
    expect(r.recorded).toMatchObject({ startReserved: 589299712, peakReserved: 589299712, segmentGrowths: 0 });
    // The 46 segments of the start rebuilt with every live block at its recorded offset (one
    // freed during the history, so sized from its request): then the cache serves the whole
    // history without growing, as PyTorch's did.
    expect(r.start).toEqual({ segments: 46, placed: 486, sizedFromRequest: 1, allocated: 0, lostSegmentAlloc: false });
    expect(r.ours).toMatchObject({ startReserved: 589299712, peakReserved: 589299712, endReserved: 589299712, segmentGrowths: 0, segmentShrinks: 0 });
    expect(r.firstDivergence).toBeNull();
    expect(r.segmentEvents.firstMismatch).toBeNull();
    expect(r.ours.peakReserved).toBeGreaterThanOrEqual(Math.max(...timeline(loadSnapshot(FIXTURE), 0).allocated));
    const text = execFileSync(process.execPath, [CLI, 'replay', FIXTURE], { encoding: 'utf8' });
    expect(text).toContain('486 allocations');
    expect(text).toContain('the 46 segments of that time were rebuilt with 486 of them at their recorded offsets');
    expect(text).toContain('reserved memory grew and shrank exactly as recorded');
  });
});
