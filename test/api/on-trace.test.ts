// memory.onTrace: live trace events in batches, with history on or off, bounded, and
// delivered off the allocating call.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { cuda, memory, type TraceBatch } from '../../lib/index.js';
import { MiB, freshSim } from '../support/helpers.js';

beforeEach(() => {
  freshSim({ devices: 2 });
  memory._record_memory_history(null);
});
afterEach(() => vi.restoreAllMocks());

describe('memory.onTrace', () => {
  it('delivers what the allocator does, in order, with history off, on the timer or at flush', async () => {
    const batches: TraceBatch[] = [];
    const sub = memory.onTrace((b) => batches.push(b), { intervalMs: 5 });
    const buf = cuda.alloc(4096, { tag: 'watched' });
    buf.free();
    expect(batches).toHaveLength(0);  // never inside the allocating call
    await new Promise((r) => setTimeout(r, 50));
    const entries = batches.flatMap((b) => b.entries);
    expect(entries.map((e) => e.action)).toEqual(['segment_alloc', 'alloc', 'free_requested', 'free_completed']);
    expect(entries[1]).toMatchObject({ addr: buf.ptr, size: 4096, user_metadata: 'watched' });
    expect(batches.every((b) => b.device === 0 && b.dropped === 0)).toBe(true);
    expect(memory._snapshot().device_traces[0]).toEqual([]);  // history stayed off (the snapshot itself is an event)
    cuda.alloc(8192, { device: 1 }).free();
    sub.flush();
    const last = batches.at(-1)!;
    expect(last.device).toBe(1);
    expect(last.entries.map((e) => e.action)).toEqual(['snapshot', 'segment_alloc', 'alloc', 'free_requested', 'free_completed']);
    sub.stop();
    const seen = batches.flatMap((b) => b.entries).length;
    cuda.alloc(4096).free();
    await new Promise((r) => setTimeout(r, 20));
    expect(batches.flatMap((b) => b.entries)).toHaveLength(seen);
  });

  it('filters by action and device, and counts what a full queue drops', () => {
    const got: TraceBatch[] = [];
    const sub = memory.onTrace((b) => got.push(b), { actions: ['segment_alloc', 'oom'], device: 0, capacity: 2 });
    const held = [cuda.alloc(30 * MiB), cuda.alloc(40 * MiB), cuda.alloc(50 * MiB)];
    cuda.alloc(30 * MiB, { device: 1 }).free();
    sub.flush();
    expect(got).toHaveLength(1);
    expect(got[0]!.entries.map((e) => [e.action, e.size])).toEqual([['segment_alloc', 30 * MiB], ['segment_alloc', 40 * MiB]]);
    expect(got[0]!.dropped).toBe(1);
    sub.stop();
    for (const b of held) b.free();
  });

  it('gives each subscriber its own actions, and history its own skip list', () => {
    memory._record_memory_history({ enabled: 'all', skipActions: ['alloc'] });
    const allocs: string[] = [];
    const frees: string[] = [];
    const a = memory.onTrace((b) => allocs.push(...b.entries.map((e) => e.action)), { actions: ['alloc'] });
    const f = memory.onTrace((b) => frees.push(...b.entries.map((e) => e.action)), { actions: ['free_requested'] });
    cuda.alloc(4096).free();
    a.flush();
    expect(allocs).toEqual(['alloc']);
    expect(frees).toEqual(['free_requested']);
    expect(memory._snapshot().device_traces[0]!.map((e) => e.action)).not.toContain('alloc');
    a.stop();
    f.stop();
    memory._record_memory_history(null);
  });

  it('a callback that throws is a warning, not a broken allocator; bad arguments are coded errors', () => {
    const warn = vi.spyOn(process, 'emitWarning').mockImplementation(() => {});
    const sub = memory.onTrace(() => { throw new Error('boom'); });
    cuda.alloc(4096).free();
    sub.flush();
    expect(warn).toHaveBeenCalledWith('onTrace callback threw: boom', { code: 'CCA_TRACE_CALLBACK_FAILED' });
    sub.stop();
    expect(() => memory.onTrace(1 as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => memory.onTrace(() => {}, { actions: ['allocate'] as never })).toThrow(/Unknown action "allocate".* in options\.actions; known actions are alloc, /);
    expect(() => memory.onTrace(() => {}, { capacity: 0 })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
  });

  it('keeps working when the simulated devices are replaced', () => {
    const got: string[] = [];
    const sub = memory.onTrace((b) => got.push(...b.entries.map((e) => e.action)), { actions: ['alloc'] });
    freshSim();
    cuda.alloc(4096).free();  // the new devices' queues exist before the first allocation
    sub.flush();
    freshSim({ devices: 1 });  // fewer devices than the subscription named
    cuda.alloc(4096).free();
    sub.flush();
    expect(got).toEqual(['alloc', 'alloc']);
    sub.stop();
  });
});
