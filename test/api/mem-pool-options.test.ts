// PyTorch's newer MemPool options and the stats that came with them, from JavaScript:
// MemPool({ use_on_oom, no_split }), reserved_bytes_by_private_pools.* and
// num_oom_rejections with throw_on_cudamalloc_oom.
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ArgumentTypeError, CudaOutOfMemoryError, MemPool, cuda, memory, use_mem_pool } from '../../lib/index.js';
import { MiB, expectValid, freshSim } from '../support/helpers.js';

beforeEach(() => freshSim({ capacityBytes: 64 * MiB }));
afterEach(() => memory._set_allocator_settings(''));

describe('MemPool options', () => {
  it('use_on_oom: a request the device cannot meet takes a cached block of the pool', () => {
    const pool = new MemPool({ use_on_oom: true });
    expect(pool.use_on_oom).toBe(true);
    expect(pool.no_split).toBe(false);
    const cached = use_mem_pool(pool, () => cuda.alloc(20 * MiB));
    const ptr = cached.ptr;
    cached.free();
    const fill = cuda.alloc(40 * MiB);
    const served = cuda.alloc(8 * MiB);
    expect(served.ptr).toBe(ptr);
    expect(memory.memory_stats().num_ooms).toBe(0);
    expect(pool.snapshot()).toHaveLength(1);
    served.free();
    // Without the option the same request fails.
    const plain = new MemPool({ useOnOom: false });
    pool.release();
    const again = use_mem_pool(plain, () => cuda.alloc(20 * MiB));
    again.free();
    expect(() => cuda.alloc(8 * MiB)).toThrow(CudaOutOfMemoryError);
    plain.release();
    fill.free();
    expectValid();
  });

  it('no_split: routed requests take whole blocks', () => {
    const pool = new MemPool({ no_split: true });
    const bufs = use_mem_pool(pool, () => [cuda.alloc(4096), cuda.alloc(3 * MiB)]);
    expect(memory.memory_allocated()).toBe(2 * MiB + 20 * MiB);
    expect(pool.snapshot().map((s) => s.blocks.length)).toEqual([1, 1]);
    for (const b of bufs) b.free();
    pool.release();
    expectValid();
  });

  it('refuses bad options with a code, changing nothing', () => {
    const before = memory.memory_stats();
    expect(() => new MemPool({ use_on_oom: 1 as unknown as boolean })).toThrow(ArgumentTypeError);
    expect(() => new MemPool({ no_split: true, noSplit: true })).toThrow(/both no_split .* and noSplit/);
    expect(() => new MemPool({ useOnOOM: true } as never)).toThrow(/did you mean "useOnOom"/);
    expect(memory.memory_stats()).toEqual(before);
  });
});

describe('reserved_bytes_by_private_pools', () => {
  it('reports each live pool\'s reserved bytes in memory_stats and its nested form, sorted', () => {
    const pool = new MemPool();
    const bufs = use_mem_pool(pool, () => [cuda.alloc(4096), cuda.alloc(30 * MiB)]);
    cuda.alloc(4096).free();
    const stats = memory.memory_stats();
    const k = `reserved_bytes_by_private_pools.0_${pool.id[1]}`;
    expect(stats[`${k}.all.current`]).toBe(32 * MiB);
    expect(stats[`${k}.small_pool.current`]).toBe(2 * MiB);
    expect(stats[`${k}.large_pool.peak`]).toBe(30 * MiB);
    expect(stats['reserved_bytes.all.current']).toBe(34 * MiB);  // the default pool's 2 MiB too
    const keys = Object.keys(stats);
    expect([...keys].sort()).toEqual(keys);
    expect(keys).toHaveLength(123 + 12);
    const summary = memory.memory_summary();
    expect(summary).toContain('GPU reserved memory by MemPool');
    expect(summary).toMatch(new RegExp(`\\| MemPool \\(0, ${pool.id[1]}\\)\\s+\\|\\s+32768 KiB \\|`));
    expect(summary).toMatch(/\|       from large pool \|\s+30720 KiB \|/);
    for (const line of summary.trimEnd().split('\n')) expect(line).toHaveLength(77);
    const nested = memory.memory_stats_as_nested_dict() as Record<string, any>;
    expect(nested.reserved_bytes_by_private_pools[`0_${pool.id[1]}`].large_pool.current).toBe(30 * MiB);
    bufs[1]!.free();
    pool.release();
    expect(memory.memory_stats()[`${k}.large_pool.freed`]).toBe(30 * MiB);
    memory.reset_peak_memory_stats();
    expect(memory.memory_stats()[`${k}.all.peak`]).toBe(2 * MiB);
    bufs[0]!.free();
    memory.empty_cache();
    expect(Object.keys(memory.memory_stats())).toHaveLength(123);  // the pool is gone
  });
});

describe('throw_on_cudamalloc_oom', () => {
  it('rejects a request past the memory fraction at once, counted in num_oom_rejections', () => {
    memory._set_allocator_settings('throw_on_cudamalloc_oom:True,per_process_memory_fraction:0.5');
    cuda.alloc(8 * MiB).free();  // 20 MiB cached: releasing it would make room
    expect(() => cuda.alloc(22 * MiB)).toThrow(/throw_on_cudamalloc_oom/);
    const s = memory.memory_stats();
    expect(s.num_oom_rejections).toBe(1);
    expect(s.num_ooms).toBe(0);
    expect(s.num_alloc_retries).toBe(0);
    expect(s['reserved_bytes.all.current']).toBe(20 * MiB);
    // Without it the allocator releases the cache and retries, and the request is met.
    memory._set_allocator_settings('per_process_memory_fraction:0.5');
    const buf = cuda.alloc(22 * MiB);
    expect(memory.memory_stats().num_alloc_retries).toBe(1);
    buf.free();
    expectValid();
  });
});
