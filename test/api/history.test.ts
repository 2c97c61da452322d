import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { ArgumentTypeError, CudaOutOfMemoryError, Stream, cuda, loadSnapshot, memory, type Snapshot } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { stacks } from '../../lib/history/stack-store.js';
import { MiB, freshSim } from '../support/helpers.js';
import { tempDir } from '../support/temp-dir.js';

beforeEach(() => {
  freshSim();
  memory._record_memory_history(null);
});

const actions = (s = memory._snapshot()) => s.device_traces[0]!.map((e) => e.action);

describe('_record_memory_history', () => {
  it('is off on a replaced runtime: no stacks captured, no annotations kept for it', () => {
    memory._record_memory_history({ enabled: 'all', context: 'all', maxEntries: 100 });
    cuda.alloc(1000).free();
    cuda.sim.configure();
    const before = stacks.size;
    const b = cuda.alloc(1000);
    memory.annotate('after the replacement', () => b.free());
    expect(stacks.size).toBe(before);
    const s = memory._snapshot();
    expect(s.device_traces[0] ?? []).toEqual([]);
    expect(s.external_annotations ?? []).toEqual([]);
  });

  it('records every event with PyTorch\'s fields', () => {
    memory._record_memory_history({ enabled: 'all', context: 'all', maxEntries: 100 });
    const a = cuda.alloc(1000, { tag: 'weights' });
    a.free();
    const s = memory._snapshot();
    const t = s.device_traces[0]!;
    // A snapshot's own entry is recorded after its trace is read, as PyTorch's is: not in it.
    expect(t.map((e) => e.action)).toEqual(['segment_alloc', 'alloc', 'free_requested', 'free_completed']);
    const alloc = t[1]!;
    expect(alloc.addr).toBe(a.ptr);
    expect(alloc.size).toBe(1000);
    expect(alloc.stream).toBe(0);
    expect(alloc.compile_context).toBe('N/A');
    expect(alloc.user_metadata).toBe('weights');
    expect(alloc.pool_id).toEqual([0, 0]);
    expect(alloc.frames![0]!.filename).toContain('history.test.ts');
    expect(t[2]!.size).toBe(1000);
    expect(t[0]!.size).toBe(2 * MiB);
    for (let i = 1; i < t.length; i++) expect(t[i]!.time_us).toBeGreaterThanOrEqual(t[i - 1]!.time_us);
    const now = Date.now() * 1000;
    expect(Math.abs(t[0]!.time_us - now)).toBeLessThan(60_000_000);
    expect(s.allocator_settings!.trace_alloc_max_entries).toBe(100);
  });

  it("keeps one entry unless enabled is 'all', and frees the history when disabled", () => {
    memory._record_memory_history({ enabled: 'state', context: 'state' });
    const live = cuda.alloc(1000);
    const s = memory._snapshot();
    expect(s.device_traces[0]).toHaveLength(1);
    expect(s.segments[0]!.blocks[0]!.frames.length).toBeGreaterThan(0);  // live blocks keep stacks
    memory._record_memory_history(null);
    expect(memory._snapshot().device_traces[0]).toHaveLength(0);
    expect(stacks.size).toBe(1);  // the live block still names its stack
    live.free();
    stacks.compact();
    expect(stacks.size).toBe(1);  // the cached segment keeps the stack that created it
    memory.empty_cache();
    stacks.compact();
    expect(stacks.size).toBe(0);  // nothing references a stack any more
  });

  // Issue 46: every entry carries the label in force (PyTorch's record_trace gives each entry
  // the thread's user_metadata; test_memory_plots_metadata), segment events included.
  it('gives segment_alloc and segment_free entries the label in force', () => {
    memory._record_memory_history({ enabled: 'all', context: 'alloc' });
    memory.withMemoryMetadata('phase one', () => cuda.alloc(1000).free());
    memory.withMemoryMetadata('cleanup', () => memory.empty_cache());
    const t = memory._snapshot().device_traces[0]!;
    const labels = Object.fromEntries(t.map((e) => [e.action, e.user_metadata]));
    expect(labels).toEqual({ segment_alloc: 'phase one', alloc: 'phase one', free_requested: 'phase one',
      free_completed: 'phase one', segment_free: 'cleanup' });
  });

  // Issue 46: PyTorch's release_block records `context ? context : context_when_segment_allocated`,
  // and emptyCache gathers its context at level 'all' (test_memory_plots_free_segment_stack).
  it('gives segment_free the empty_cache() call site with context all, else the segment\'s allocation stack', () => {
    function allocateHere() {
      cuda.alloc(1000).free();
    }
    function emptyHere() {
      memory.empty_cache();
    }
    const segmentFreeFrames = (context: 'all' | 'alloc') => {
      memory._record_memory_history(null);
      memory._record_memory_history({ enabled: 'all', context, stacks: 'all' });
      allocateHere();
      emptyHere();
      const t = memory._snapshot().device_traces[0]!;
      const free = t.find((e) => e.action === 'segment_free')!;
      return (free.frames ?? []).map((f) => f.name);
    };
    const all = segmentFreeFrames('all');
    expect(all).toContain('emptyHere');
    expect(all).not.toContain('allocateHere');
    const alloc = segmentFreeFrames('alloc');
    expect(alloc).toContain('allocateHere');
    expect(alloc).not.toContain('emptyHere');
  });

  it('wraps the ring keeping the newest entries, and says it overflowed', () => {
    memory._record_memory_history({ enabled: 'all', context: null, maxEntries: 10 });
    for (let i = 0; i < 20; i++) cuda.alloc(512 * (i + 1)).free();
    const s = memory._snapshot();
    const t = s.device_traces[0]!;
    expect(t).toHaveLength(10);
    expect(t[t.length - 1]!.action).toBe('free_completed');  // the last event, not the read
    expect(t[t.length - 1]!.size).toBe(512 * 20);
    expect(s.allocator_settings!.trace_alloc_overflowed).toBe(true);
    expect(t[0]!.frames).toBeUndefined();  // context null: no stacks on entries
  });

  it('skips actions, clears history, and accepts the legacy signature', () => {
    memory._record_memory_history({ enabled: 'all', context: null, skipActions: ['snapshot', 'segment_alloc'] });
    cuda.alloc(100).free();
    expect(actions()).toEqual(['alloc', 'free_requested', 'free_completed']);
    memory._record_memory_history({ enabled: 'all', context: null, clearHistory: true });
    expect(actions()).toEqual([]);
    expect(actions()).toEqual(['snapshot']);  // the previous read's entry
    memory._record_memory_history(true, { trace_alloc_max_entries: 3, trace_alloc_record_context: true });
    cuda.alloc(100).free();
    const t = memory._snapshot().device_traces[0]!;
    expect(t).toHaveLength(3);
    expect(t[0]!.frames!.length).toBeGreaterThan(0);
    expect(() => memory._record_memory_history({ enabled: 'some' as never })).toThrow(ArgumentTypeError);
    expect(() => memory._record_memory_history({ context: 'stack' as never })).toThrow(ArgumentTypeError);
    expect(() => memory._record_memory_history({ skipActions: ['bogus'] })).toThrow(/Unknown action "bogus"/);
    expect(() => memory._record_memory_history({ maxEntrys: 3 } as never)).toThrow(/maxEntries/);
  });

  it('context decides where stacks go: alloc stacks on frees, or the free site with "all"', () => {
    const freeHere = (b: { free(): void }) => b.free();
    memory._record_memory_history({ enabled: 'all', context: 'alloc' });
    freeHere(cuda.alloc(100));
    let t = memory._snapshot().device_traces[0]!;
    expect(t[2]!.frames).toBe(t[1]!.frames);  // the same interned stack: the allocation's
    memory._record_memory_history({ enabled: 'all', context: 'all', clearHistory: true });
    freeHere(cuda.alloc(100));
    t = memory._snapshot().device_traces[0]!;
    const freeEntry = t.find((e) => e.action === 'free_requested')!;
    expect(freeEntry.frames![0]!.name).toBe('freeHere');
  });

  it('stores identical stacks once, and samples stacks when asked', () => {
    memory._record_memory_history({ enabled: 'all', context: 'alloc' });
    for (let i = 0; i < 5; i++) cuda.alloc(100).free();
    const allocs = memory._snapshot().device_traces[0]!.filter((e) => e.action === 'alloc');
    expect(new Set(allocs.map((e) => e.frames)).size).toBe(1);
    memory._record_memory_history({ enabled: 'all', context: 'alloc', clearHistory: true, stackSampleRate: 0.25 });
    for (let i = 0; i < 8; i++) cuda.alloc(100).free();
    const sampled = memory._snapshot().device_traces[0]!.filter((e) => e.action === 'alloc');
    expect(sampled.filter((e) => e.frames!.length > 0)).toHaveLength(2);
  });

  it('records annotations as START/END pairs', async () => {
    memory._record_memory_history({ enabled: 'all' });
    memory.annotate('forward', () => cuda.alloc(100));
    await memory.annotate('backward', async () => cuda.alloc(100));
    const r = memory.annotate('step');
    r.end();
    r.end();
    const a = memory._snapshot().external_annotations!;
    expect(a.map((x) => `${x.name}:${x.stage}`)).toEqual(['forward:START', 'forward:END', 'backward:START', 'backward:END', 'step:START', 'step:END']);
    expect(a[0]!.device).toBe(0);
    expect(a[1]!.time_us).toBeGreaterThanOrEqual(a[0]!.time_us);
  });

  it('stamps annotations with the trace clock, so markers and allocations interleave exactly', () => {
    memory._record_memory_history({ enabled: 'all' });
    for (let i = 0; i < 50; i++) {
      cuda.alloc(100).free();
      memory.annotate('step', () => cuda.alloc(200).free());
    }
    const s = memory._snapshot();
    const events = [
      ...s.device_traces[0]!.filter((e) => e.action === 'alloc').map((e) => ({ t: e.time_us, what: `alloc ${e.size}` })),
      ...s.external_annotations!.map((x) => ({ t: x.time_us, what: x.stage })),
    ];
    // A stable sort by time must give back the program order: 100, START, 200, END, ...
    const order = events.map((e, i) => ({ ...e, i }))
      .sort((x, y) => x.t - y.t || rank(x.what) - rank(y.what)).map((e) => e.what);
    expect(order).toEqual(Array.from({ length: 50 }, () => ['alloc 100', 'START', 'alloc 200', 'END']).flat());
  });

  it('disabling or clearing history drops the annotations with it', () => {
    memory._record_memory_history({ enabled: 'all' });
    memory.annotate('old', () => undefined);
    memory._record_memory_history(null);
    memory._record_memory_history({ enabled: 'all' });
    expect(memory._snapshot().external_annotations).toEqual([]);
    memory.annotate('kept', () => undefined);
    memory._record_memory_history({ enabled: 'all', clearHistory: true });
    expect(memory._snapshot().external_annotations).toEqual([]);
  });
});

// Within one microsecond, program order: an alloc before a START before an alloc before an END.
const rank = (what: string): number => ({ 'alloc 100': 0, START: 1, 'alloc 200': 2, END: 3 } as Record<string, number>)[what]!;

describe('snapshots', () => {
  it('memory_snapshot matches the allocator, with PyTorch\'s fields and states', () => {
    memory._record_memory_history({ enabled: 'all', context: 'state' });
    const side = Stream.create();
    cuda.sim.holdStream(side);
    const a = cuda.alloc(3000);
    const b = cuda.alloc(4096);
    cuda.recordStream(b, side);
    b.free();
    const segs = memory.memory_snapshot({ includeTraces: false });
    expect(segs).toHaveLength(1);
    const s = segs[0]!;
    expect(s).toMatchObject({
      device: 0, total_size: 2 * MiB, allocated_size: 3072, active_size: 3072 + 4096,
      requested_size: 3000 + 4096, stream: 0, segment_type: 'small', is_expandable: false,
    });
    expect(s.segment_pool_id).toEqual([0, 0]);
    expect(s.blocks.map((x) => x.state)).toEqual(['active_allocated', 'active_pending_free', 'inactive']);
    expect(s.blocks[0]!.address).toBe(a.ptr);
    expect(s.blocks[1]!.address).toBe(s.blocks[0]!.address + 3072);
    expect(s.blocks.reduce((n, x) => n + x.size, 0)).toBe(s.total_size);
    expect(s.blocks[2]!.requested_size).toBe(0);
    expect(memory.memory_snapshot({ includeTraces: true })).toEqual(segs);
    expect(memory._snapshot({ includeTraces: false }).device_traces).toEqual([[]]);
  });

  it('the fast path builds no clock converter and reads no history', () => {
    memory._record_memory_history({ enabled: 'all', context: null, maxEntries: 100000 });
    for (let i = 0; i < 2000; i++) cuda.alloc(512).free();
    const builds = native.clockBuilds();
    for (let i = 0; i < 50; i++) memory.memory_snapshot({ includeTraces: false });
    expect(native.clockBuilds()).toBe(builds);
    memory._snapshot();
    memory._snapshot();
    expect(native.clockBuilds()).toBeLessThanOrEqual(builds + 1);  // cached between close snapshots
  });

  it('gives every event and annotation the same time in every snapshot, across recalibrations', async () => {
    memory._record_memory_history({ enabled: 'all', context: null, maxEntries: 100000 });
    const times = (s: Snapshot) => ({
      events: s.device_traces[0]!.filter((e) => e.action !== 'snapshot').map((e) => [e.seq, e.time_us]),
      annotations: (s.external_annotations ?? []).map((a) => [a.seq, a.time_us]),
    });
    const spin = (ms: number) => { for (const end = Date.now() + ms; Date.now() < end;); };
    for (let i = 0; i < 200; i++) {
      memory.annotate(`step ${i}`, () => cuda.alloc(512 + i).free());
      if (i % 50 === 0) spin(5);  // ticks spread over time, so a refit would move them
    }
    const first = times(memory._snapshot());
    const builds = native.clockRecalibrate();
    cuda.alloc(4096).free();
    spin(20);
    expect(native.clockRecalibrate()).toBe(builds + 1);
    const second = times(memory._snapshot());
    const dir = tempDir('cca-clock-');
    await memory._dump_snapshot(join(dir, 'later.pickle'));
    const dumped = times(loadSnapshot(join(dir, 'later.pickle')));
    expect(first.events.length).toBeGreaterThanOrEqual(600);  // alloc, free_requested, free_completed each
    expect(first.annotations.length).toBe(400);
    for (const later of [second, dumped]) {
      expect(later.events.slice(0, first.events.length)).toEqual(first.events);
      expect(later.events.length).toBeGreaterThan(first.events.length);
      expect(later.annotations).toEqual(first.annotations);
    }
  });

  it('an oom is recorded with device_free, and the hooks run before the error is thrown', () => {
    freshSim({ capacityBytes: 64 * MiB });
    memory._record_memory_history({ enabled: 'all' });
    const dir = tempDir('cca-oom-');
    const path = join(dir, 'oom-{pid}.pickle');
    memory.dumpSnapshotOnOutOfMemory(path);
    const seen: number[] = [];
    const off = memory.onOutOfMemory((e) => seen.push(e.requested));
    let err: CudaOutOfMemoryError | undefined;
    try {
      cuda.alloc(100 * MiB);
    } catch (e) {
      err = e as CudaOutOfMemoryError;
    }
    off();
    memory.dumpSnapshotOnOutOfMemory(null);
    expect(err).toBeInstanceOf(CudaOutOfMemoryError);
    expect(seen).toEqual([100 * MiB]);
    const file = path.replace('{pid}', String(process.pid));
    expect(existsSync(file)).toBe(true);
    const snap = loadSnapshot(file);
    const oom = snap.device_traces[0]!.find((e) => e.action === 'oom')!;
    expect(oom.device_free).toBe(64 * MiB);
    expect(oom.addr).toBeUndefined();
    expect(oom.size).toBe(100 * MiB);
  });

  it('CCA_OOM_SNAPSHOT turns the dump on without code changes', () => {
    const dir = tempDir('cca-oom-env-');
    const script = `import { cuda, memory } from ${JSON.stringify(new URL('../../dist/index.js', import.meta.url).href)};
      try { cuda.alloc(100 * 2 ** 20); } catch (e) { console.log(e.snapshotPath); }
      console.log(memory.get_allocator_backend());`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], {
      encoding: 'utf8', env: { ...process.env, CCA_DEVICE: 'sim', CCA_SIM_CAPACITY_MB: '64', CCA_OOM_SNAPSHOT: join(dir, 'oom-{pid}.pickle') },
    }).trim().split('\n');
    expect(out[0]).toMatch(/oom-\d+\.pickle$/);
    expect(existsSync(out[0]!)).toBe(true);
    expect(loadSnapshot(out[0]!).device_traces[0]!.some((e) => e.action === 'oom')).toBe(false);  // history was off
    expect(out[1]).toBe('native');
  });

  it('throwing or invalid hooks never hide the OOM', () => {
    freshSim({ capacityBytes: 64 * MiB });
    memory.onOutOfMemory(() => {
      throw new Error('boom');
    });
    expect(() => cuda.alloc(100 * MiB)).toThrow(CudaOutOfMemoryError);
    expect(() => memory.onOutOfMemory('x' as never)).toThrow(ArgumentTypeError);
  });
});

describe('expandable segments', () => {
  it('map pages on demand, snapshot as expandable ranges and trace segment_map/unmap', () => {
    memory._set_allocator_settings('expandable_segments:True');
    memory._record_memory_history({ enabled: 'all', context: null });
    const a = cuda.alloc(15 * MiB);
    const b = cuda.alloc(15 * MiB);
    expect(b.ptr).toBe(a.ptr + 15 * MiB);
    const segs = memory.memory_snapshot();
    expect(segs).toHaveLength(1);
    expect(segs[0]).toMatchObject({ is_expandable: true, total_size: 40 * MiB, segment_type: 'large' });
    expect(memory.memory_stats()['segment.all.current']).toBe(0);
    expect(memory.memory_reserved()).toBe(40 * MiB);
    const data = new Uint8Array(2 * MiB).fill(9);
    // Buffer.equals: vitest's deep equality walks 2M elements one by one (seconds).
    expect(Buffer.from(b.copyFrom(data, 4 * MiB).copyTo(new Uint8Array(2 * MiB), 4 * MiB)).equals(data)).toBe(true);
    a.free();
    b.free();
    memory.empty_cache();
    expect(memory.memory_reserved()).toBe(0);
    expect(actions().filter((x) => x.startsWith('segment_'))).toEqual(['segment_map', 'segment_map', 'segment_unmap']);
    expect(memory.get_allocator_settings().expandable_segments).toBe(true);
    expect(memory.check_invariants()).toBeNull();
    memory._set_allocator_settings('');
  });
});
