// DeviceBuffer.free() without a crossing (lib/pending-frees.ts, native/binding/pending_frees.h):
// the pointer waits in the thread's list, and whatever this thread calls next sees it freed.
// The list is read here through the Float64Array the addon hands out, which is the same
// memory and reading it is no call.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cuda, memory } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { MiB, expectValid, freshSim } from '../support/helpers.js';

const list = native.pendingFrees();
const capacity = (list.length - 1) / 2;

beforeEach(() => freshSim());
afterEach(() => memory._record_memory_history(null));

describe('a free from JS', () => {
  it('waits in the list, and the next call of any kind sees the memory freed', () => {
    const buf = cuda.alloc(3 * MiB);
    const ptr = buf.ptr;
    buf.free();
    expect(list[0]).toBe(1);
    expect([list[1], list[2]]).toEqual([0, ptr]);
    expect(buf.disposed).toBe(true);
    expect(memory.memory_allocated()).toBe(0);
    expect(list[0]).toBe(0);
    expect(memory.memory_reserved()).toBe(20 * MiB);
    expectValid();
  });

  it('is handed over at the end of the job when nothing calls in first', async () => {
    cuda.alloc(1000).free();
    expect(list[0]).toBe(1);
    await Promise.resolve();
    expect(list[0]).toBe(0);
    expect(memory.memory_stats()['allocation.all.current']).toBe(0);
  });

  it('comes back before the next allocation, which reuses the block', () => {
    const first = cuda.alloc(4096);
    const ptr = first.ptr;
    first.free();
    const again = cuda.alloc(4096);
    expect(again.ptr).toBe(ptr);
    expect(memory.memory_stats()['num_alloc_retries']).toBe(0);
    again.free();
  });

  it('holds at most its capacity: a free that finds it full crosses, handing the list over first', () => {
    const bufs = Array.from({ length: capacity * 2 + 3 }, (_, i) => cuda.alloc(512 * (i + 1)));
    for (const b of bufs) b.free();
    // capacity listed, one crossing (the list emptied), capacity listed, one crossing, one listed
    expect(list[0]).toBeLessThanOrEqual(capacity);
    expect(list[0]).toBe(1);
    expect(memory.memory_stats()['allocation.all.current']).toBe(0);
    expectValid();
  });

  it('crosses at once while history is recorded, so each entry has its own time and order', () => {
    memory._record_memory_history({ enabled: 'all', context: null });
    const a = cuda.alloc(1000);
    const b = cuda.alloc(2000);
    b.free();
    expect(list[0]).toBe(0);
    a.free();
    expect(list[0]).toBe(0);
    const trace = memory._snapshot().device_traces[0]!;
    expect(trace.map((e) => [e.action, e.size])).toEqual([
      ['segment_alloc', 2 * MiB], ['alloc', 1000], ['alloc', 2000], ['free_requested', 2000], ['free_completed', 2000],
      ['free_requested', 1000], ['free_completed', 1000],
    ]);
  });

  it('that the allocator refuses is the next call\'s error, taken off the list, and that call does nothing else', () => {
    const kept = cuda.alloc(4096);
    // Only a direct writer of the raw list can put a bad pointer there; DeviceBuffer cannot.
    list[0] = 1;
    list[1] = 0;
    list[2] = kept.ptr + 8;
    expect(() => cuda.alloc(100)).toThrow(expect.objectContaining({ code: 'ERR_CCA_INVALID_POINTER' }));
    expect(list[0]).toBe(0);
    expect(memory.memory_stats()['allocation.all.current']).toBe(1);
    kept.free();
    expect(memory.memory_allocated()).toBe(0);
    expectValid();
  });

  it('keeps the frees after a refused one for the next call', () => {
    const a = cuda.alloc(4096);
    const b = cuda.alloc(8192);
    list[0] = 3;
    list.set([0, a.ptr, 0, 12345, 0, b.ptr], 1);
    expect(() => memory.memory_stats()).toThrow(expect.objectContaining({ code: 'ERR_CCA_INVALID_POINTER' }));
    expect(list[0]).toBe(1);
    expect(memory.memory_stats()['allocation.all.current']).toBe(0);
    expectValid();
  });
});
