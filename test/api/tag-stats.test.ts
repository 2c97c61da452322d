// memory_stats_by_tag(): live memory per label, kept by the core as tagged blocks come and go.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cuda, memory } from '../../lib/index.js';
import { MiB, expectValid, freshParityState, restoreParityState } from '../support/helpers.js';

beforeEach(() => freshParityState());
afterEach(() => restoreParityState());

describe('memory_stats_by_tag', () => {
  it('counts each label\'s live bytes, requested bytes and allocations, with peaks', async () => {
    expect(memory.memory_stats_by_tag()).toEqual({});
    const weights = cuda.alloc(3 * MiB, { tag: 'weights' });
    memory._set_memory_metadata('optimizer');
    const state = [cuda.alloc(1000), cuda.alloc(5000)];
    memory._set_memory_metadata('');
    const untagged = cuda.alloc(4096);
    const act = await memory.withMemoryMetadata('activations', async () => cuda.alloc(10 * MiB));
    const byTag = memory.memory_stats_by_tag();
    expect(Object.keys(byTag)).toEqual(['activations', 'weights', 'optimizer']);
    expect(byTag.weights).toEqual({
      allocated_bytes: { current: 3 * MiB, peak: 3 * MiB },
      requested_bytes: { current: 3 * MiB, peak: 3 * MiB },
      allocation: { current: 1, peak: 1 },
    });
    expect(byTag.optimizer!.allocated_bytes.current).toBe(1024 + 5120);
    expect(byTag.optimizer!.requested_bytes.current).toBe(6000);
    expect(byTag.optimizer!.allocation.current).toBe(2);
    const tagged = Object.values(byTag).reduce((n, t) => n + t.allocated_bytes.current, 0);
    expect(memory.memory_allocated() - tagged).toBe(4096);  // what is left is untagged
    state[0]!.free();
    act.free();
    const after = memory.memory_stats_by_tag();
    expect(after.optimizer!.allocation).toEqual({ current: 1, peak: 2 });
    expect(after.activations!.allocated_bytes).toEqual({ current: 0, peak: 10 * MiB });
    memory.reset_peak_memory_stats();
    expect(memory.memory_stats_by_tag().activations!.allocated_bytes.peak).toBe(0);
    expectValid();
    for (const b of [weights, state[1]!, untagged]) b.free();
    expect(Object.values(memory.memory_stats_by_tag()).every((t) => t.allocation.current === 0)).toBe(true);
  });

  it('is per device and refuses a bad device with a code, changing nothing', () => {
    cuda.alloc(4096, { tag: 'x' });
    expect(memory.memory_stats_by_tag(0).x!.allocation.current).toBe(1);
    expect(() => memory.memory_stats_by_tag(99)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => memory.memory_stats_by_tag('0' as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
  });
});
