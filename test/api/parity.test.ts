// PyTorch's names as porters write them (issue 24): history options in PyTorch's spelling,
// the current memory metadata, one allocation's traceback, caching off, Node's own frames
// out of stacks.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArgumentTypeError, InvalidArgumentError, InvalidPointerError, analysis, cuda, memory } from '../../lib/index.js';
import { renderTrace } from '../../lib/cli/format-snapshot.js';
import { native } from '../../lib/native.js';
import { capture } from '../../lib/history/record.js';
import { MiB, expectValid, freshParityState, freshSim, restoreParityState } from '../support/helpers.js';
import { replayOnBoth } from '../support/replay.js';

beforeEach(freshParityState);
afterEach(restoreParityState);

const traces = () => memory._snapshot().device_traces[0]!;

describe('_record_memory_history in PyTorch\'s spelling', () => {
  it('takes max_entries, clear_history and skip_actions as PyTorch names them', () => {
    memory._record_memory_history({ enabled: 'all', max_entries: 3, skip_actions: ['snapshot'] });
    for (let i = 0; i < 4; i++) cuda.alloc(512).free();
    expect(capture.maxEntries).toBe(3);
    expect(traces().map((e) => e.action)).toEqual(['alloc', 'free_requested', 'free_completed']);
    memory._record_memory_history('all', { max_entries: 10, clear_history: true });
    expect(traces().map((e) => e.action)).toEqual([]);
    expect(traces().map((e) => e.action)).toEqual(['snapshot']);  // the previous read's entry
  });

  it('accepts the Python-only options and checks their type', () => {
    memory._record_memory_history({ enabled: 'all', compile_context: true, global_record_annotations: false, record_cuda: true, record_pinned_host_memory: false });
    expect(capture.enabled).toBe(true);
    memory._record_memory_history(true, { trace_alloc_max_entries: 5, compile_context: false });
    expect(capture.maxEntries).toBe(5);
    expect(() => memory._record_memory_history({ enabled: 'all', compile_context: 'yes' as never })).toThrow(/compile_context/);
  });

  it('refuses a call that would record nothing, with a code that says so, changing nothing', () => {
    memory._record_memory_history({ enabled: 'all', maxEntries: 7 });
    for (const o of [{ record_cuda: false }, { recordCuda: false, recordPinnedHostMemory: false }]) {
      const e = (() => { try { memory._record_memory_history({ enabled: 'all', maxEntries: 9, ...o } as never); } catch (err) { return err; } })();
      expect(e).toBeInstanceOf(InvalidArgumentError);
      expect((e as { code: string }).code).toBe('ERR_INVALID_ARG_VALUE');
      expect((e as Error).message).toMatch(/record_pinned_host_memory: true|recordPinnedHostMemory: true/);
    }
    expect(capture.maxEntries).toBe(7);  // unchanged
  });

  it('names the key the caller wrote, and refuses both spellings of one key', () => {
    expect(() => memory._record_memory_history({ enabled: 'all', max_entries: -1 })).toThrow(/max_entries/);
    expect(() => memory._record_memory_history({ enabled: 'all', skip_actions: ['nope'] })).toThrow(/skip_actions/);
    expect(() => memory._record_memory_history({ enabled: 'all', max_entries: 5, maxEntries: 5 })).toThrow(ArgumentTypeError);
    expect(() => memory._record_memory_history({ enabled: 'all', max_entry: 5 } as never)).toThrow(/max_entry/);
  });
});

describe('memory metadata', () => {
  it('labels every allocation until changed; a call\'s own tag wins', () => {
    memory._record_memory_history({ enabled: 'all' });
    expect(memory._get_memory_metadata()).toBe('');
    memory._set_memory_metadata('optimizer');
    const a = cuda.alloc(512);
    const b = cuda.alloc(512, { tag: 'mine' });
    memory._set_memory_metadata('');
    const c = cuda.alloc(512);
    const byAddr = new Map(memory._snapshot().segments.flatMap((s) => s.blocks).map((k) => [k.address, k.user_metadata ?? '']));
    expect([byAddr.get(a.ptr), byAddr.get(b.ptr), byAddr.get(c.ptr)]).toEqual(['optimizer', 'mine', '']);
    const alloc = traces().find((e) => e.action === 'alloc' && e.addr === a.ptr)!;
    expect(alloc.user_metadata).toBe('optimizer');
  });

  it('scopes nest, survive a throw, and an async scope holds until it settles', async () => {
    memory._set_memory_metadata('base');
    expect(() => memory.withMemoryMetadata('inner', () => { throw new Error('x'); })).toThrow('x');
    expect(memory._get_memory_metadata()).toBe('base');
    const seen = memory.withMemoryMetadata('outer', () => [memory._get_memory_metadata(), memory.withMemoryMetadata('inner', () => memory._get_memory_metadata()), memory._get_memory_metadata()]);
    expect(seen).toEqual(['outer', 'inner', 'outer']);
    let release!: () => void;
    const p = memory.withMemoryMetadata('async', () => new Promise<void>((r) => { release = r; }));
    expect(memory._get_memory_metadata()).toBe('async');
    release();
    await p;
    expect(memory._get_memory_metadata()).toBe('base');
  });

  it('overlapping async scopes end in any order without clearing each other', async () => {
    let endA!: () => void;
    let endB!: () => void;
    const a = memory.withMemoryMetadata('a', () => new Promise<void>((r) => { endA = r; }));
    const b = memory.withMemoryMetadata('b', () => new Promise<void>((r) => { endB = r; }));
    endA();
    await a;
    expect(memory._get_memory_metadata()).toBe('b');
    endB();
    await b;
    expect(memory._get_memory_metadata()).toBe('');
  });
});

describe('_allocation_traceback', () => {
  function makeWeights() {
    return cuda.alloc(4096);
  }

  it('gives the allocation\'s stack by buffer or by pointer, null when none was recorded', () => {
    const before = cuda.alloc(512);
    expect(memory._allocation_traceback(before)).toBeNull();  // history off
    memory._record_memory_history({ enabled: 'all', context: 'state' });
    const w = makeWeights();
    const frames = memory._allocation_traceback(w)!;
    expect(frames[0]!.name).toBe('makeWeights');
    expect(frames[0]!.filename).toMatch(/parity\.test\.ts$/);
    expect(memory._allocation_traceback(w.ptr + 100)).toEqual(frames);  // inside it
    expect(memory._allocation_traceback(w.ptr + 4096)).toBeNull();  // past what was asked
    expect(memory._allocation_traceback(123)).toBeNull();
    w.free();
    expect(memory._allocation_traceback(w.ptr)).toBeNull();
    expect(() => memory._allocation_traceback(w)).toThrow(/_allocation_traceback/);
  });

  it('drops Node\'s own frames unless asked to keep them', async () => {
    memory._record_memory_history({ enabled: 'all', stackDepth: 30 });
    const inTimer = await new Promise<ReturnType<typeof cuda.alloc>>((r) => setImmediate(() => r(cuda.alloc(512))));
    expect(memory._allocation_traceback(inTimer)!.some((f) => f.filename.startsWith('node:'))).toBe(false);
    memory._record_memory_history({ enabled: 'all', stackDepth: 30, keepNodeFrames: true });
    const kept = await new Promise<ReturnType<typeof cuda.alloc>>((r) => setImmediate(() => r(cuda.alloc(512))));
    expect(memory._allocation_traceback(kept)!.some((f) => f.filename.startsWith('node:'))).toBe(true);
  });
});

describe('caching off', () => {
  it('gives each allocation its own segment and frees it to the device at once; stats and history go on', () => {
    memory._record_memory_history({ enabled: 'all' });
    cuda.alloc(MiB).free();
    expect(memory.memory_reserved()).toBe(2 * MiB);  // cached
    memory.caching_allocator_enable(false);
    expect(memory.memory_reserved()).toBe(0);  // the cache went back
    const a = cuda.alloc(1000);
    expect(memory.memory_reserved()).toBe(1024);
    expect(memory.memory_allocated()).toBe(1024);
    const mallocs = memory.memory_stats()['num_device_alloc']!;
    a.free();
    expect(memory.memory_reserved()).toBe(0);
    cuda.alloc(1000).free();
    expect(memory.memory_stats()['num_device_alloc']).toBe(mallocs + 1);  // no reuse
    expectValid();
    const actions = traces().map((e) => e.action);
    expect(actions.slice(-5)).toEqual(['segment_alloc', 'alloc', 'free_requested', 'free_completed', 'segment_free']);
    memory.caching_allocator_enable(true);
    cuda.alloc(1000).free();
    expect(memory.memory_reserved()).toBe(2 * MiB);
  });

  it('a free that waits on another stream returns its memory when the wait ends', () => {
    memory.caching_allocator_enable(false);
    const side = cuda.Stream.create();
    const b = cuda.alloc(4096);
    cuda.sim.holdStream(side);
    cuda.recordStream(b, side);
    b.free();
    expect(memory.memory_reserved()).toBe(4096);  // pending
    cuda.sim.completeStream(side);
    cuda.alloc(512).free();  // collects completed frees
    expect(memory.memory_reserved()).toBe(0);
    expectValid();
  });

  it('the scoped form restores caching when it ends, also after a throw', () => {
    expect(() => memory.caching_allocator_disabled(() => {
      expect(native.cachingEnabled(0)).toBe(false);
      throw new Error('x');
    })).toThrow('x');
    expect(native.cachingEnabled(0)).toBe(true);
    memory.caching_allocator_enable(false);
    memory.caching_allocator_disabled(() => 1);
    expect(native.cachingEnabled(0)).toBe(false);  // still off: the setting said so
  });

  it('a scope still open when the runtime is replaced leaves the new runtime caching', async () => {
    let end!: () => void;
    const open = memory.caching_allocator_disabled(() => new Promise<void>((r) => { end = r; }));
    expect(native.cachingEnabled(0)).toBe(false);
    freshSim();
    expect(native.cachingEnabled(0)).toBe(true);
    end();
    await open;
    expect(native.cachingEnabled(0)).toBe(true);
    memory.caching_allocator_disabled(() => expect(native.cachingEnabled(0)).toBe(false));
    expect(native.cachingEnabled(0)).toBe(true);  // the count was not left at -1
  });

  it('memory allocated before caching went off returns once its segment is free', () => {
    const a = cuda.alloc(1000);
    const b = cuda.alloc(1000);  // same 2 MiB small segment
    memory.caching_allocator_enable(false);
    expect(memory.memory_reserved()).toBe(2 * MiB);
    a.free();
    expect(memory.memory_reserved()).toBe(2 * MiB);  // b still holds the segment
    b.free();
    expect(memory.memory_reserved()).toBe(0);
    expectValid();
  });
});

describe('_annotate_memory', () => {
  function packForBackward(b: ReturnType<typeof cuda.alloc>) {
    memory._annotate_memory(b, 'saved for backward');
  }

  it('records an annotate entry at the allocation, with its stack; the allocation keeps its own label', () => {
    memory._record_memory_history({ enabled: 'all', context: 'all' });
    const a = cuda.alloc(1000, { tag: 'activations' });
    packForBackward(a);
    memory._annotate_memory(a.ptr + 10, 'second note');
    const t = traces();
    const notes = t.filter((e) => e.action === 'annotate');
    expect(notes.map((e) => [e.addr, e.size, e.user_metadata])).toEqual([[a.ptr, 1000, 'saved for backward'], [a.ptr, 1000, 'second note']]);
    expect(notes[0]!.frames![0]!.name).toBe('packForBackward');
    const block = memory._snapshot().segments[0]!.blocks.find((k) => k.address === a.ptr)!;
    expect(block.user_metadata).toBe('activations');
    // Not a change of state: replay reads the history as if the notes were not there.
    a.free();
    const snap = memory._snapshot();
    memory._record_memory_history(null);
    const report = replayOnBoth(snap);
    expect(report.firstDivergence).toBeNull();
    expect(renderTrace(snap, { device: 0, limit: 100, skip: 0 })).toMatch(/annotate .*\[saved for backward\].*packForBackward/);
  });

  it('skipActions keeps it out of the ring; with history off nothing is recorded; a dead address is an error', () => {
    memory._record_memory_history({ enabled: 'all', skipActions: ['annotate'] });
    const a = cuda.alloc(512);
    memory._annotate_memory(a, 'x');
    expect(traces().some((e) => e.action === 'annotate')).toBe(false);
    memory._record_memory_history(null);
    memory._annotate_memory(a, 'x');
    expect(() => memory._annotate_memory(a.ptr + 4096, 'x')).toThrow(InvalidPointerError);
    a.free();
    expect(() => memory._annotate_memory(a, 'x')).toThrow(/_annotate_memory/);
    expectValid();
  });
});
