import { beforeEach, describe, expect, it } from 'vitest';
import { cuda, memory } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { MiB, expectValid, freshSim } from '../support/helpers.js';

beforeEach(() => freshSim());

describe('memory_stats', () => {
  it('has PyTorch\'s 122 keys and the newer num_oom_rejections in sorted order, with max_split_size -1 when unlimited', () => {
    const stats = memory.memory_stats();
    const keys = Object.keys(stats);
    expect(keys).toHaveLength(123);
    expect(stats.num_oom_rejections).toBe(0);
    expect([...keys].sort()).toEqual(keys);
    expect(stats.max_split_size).toBe(-1);
    expect(keys).toContain('allocation.large_pool.peak');
    expect(keys).toContain('num_alloc_retries');
    expect(keys.some((k) => k.startsWith('allocated.'))).toBe(false);
  });

  it('each single value (statValue, behind memory_allocated() and the like) is memory_stats()\'s', () => {
    memory._set_allocator_settings('max_split_size_mb:64');
    const kept = [cuda.alloc(3000), cuda.alloc(5 * MiB), cuda.alloc(80 * MiB)];
    cuda.alloc(700).free();
    const stats = memory.memory_stats();
    const keys = native.statKeys();
    keys.forEach((key, i) => expect([key, native.statValue(0, i)]).toEqual([key, stats[key]]));
    expect(memory.memory_allocated()).toBe(stats['allocated_bytes.all.current']);
    expect(memory.max_memory_reserved()).toBe(stats['reserved_bytes.all.peak']);
    expect(() => native.statValue(0, keys.length)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    for (const b of kept) b.free();
    memory._set_allocator_settings('');
  });

  it('counts an allocation, its rounding and its segment', () => {
    const buf = cuda.alloc(1000);
    const s = memory.memory_stats();
    expect(s['allocated_bytes.all.current']).toBe(1024);
    expect(s['allocated_bytes.small_pool.current']).toBe(1024);
    expect(s['requested_bytes.all.current']).toBe(1000);
    expect(s['reserved_bytes.all.current']).toBe(2 * MiB);
    expect(s['segment.small_pool.current']).toBe(1);
    expect(s['allocation.all.allocated']).toBe(1);
    expect(memory.memory_allocated()).toBe(1024);
    expect(memory.memory_reserved()).toBe(2 * MiB);
    buf.free();
    expect(memory.memory_allocated()).toBe(0);
    expect(memory.memory_reserved()).toBe(2 * MiB);
    expect(memory.max_memory_allocated()).toBe(1024);
    expectValid();
  });

  it('nests at each dot', () => {
    cuda.alloc(5 * MiB);
    const nested = memory.memory_stats_as_nested_dict() as any;
    expect(nested.allocated_bytes.large_pool.current).toBe(5 * MiB);
    expect(nested.oversize_allocations.current).toBe(0);
    expect(nested.num_ooms).toBe(0);
  });

  it('resets peaks and accumulated counts', () => {
    const a = cuda.alloc(8 * MiB);
    a.free();
    cuda.alloc(1 * MiB);
    memory.reset_peak_memory_stats();
    expect(memory.max_memory_allocated()).toBe(memory.memory_allocated());
    memory.reset_accumulated_memory_stats();
    const s = memory.memory_stats();
    expect(s['allocation.all.allocated']).toBe(0);
    expect(s['allocation.all.freed']).toBe(0);
    expect(s.num_device_alloc).toBe(0);
    expect(s['allocation.all.current']).toBe(1);
  });
});

describe('native memoryStats', () => {
  it('fills a buffer of the right length in place, else returns a new one', () => {
    const n = native.statKeys().length;
    const into = new Float64Array(n).fill(-7);
    const b = cuda.alloc(3 * MiB);
    expect(native.memoryStats(0, into)).toBe(into);
    expect(into[native.statKeys().indexOf('allocated_bytes.all.current')]).toBe(3 * MiB);
    expect(into.includes(-7)).toBe(false);
    const short = new Float64Array(3);
    const fresh = native.memoryStats(0, short);
    expect(fresh).not.toBe(short);
    expect(fresh).toHaveLength(n);
    expect(memory.memory_allocated()).toBe(3 * MiB);
    b.free();
    expect(memory.memory_allocated()).toBe(0);
  });
});

describe('cache control', () => {
  it('empty_cache returns unused segments and keeps used ones', () => {
    const keep = cuda.alloc(4096);
    const big = cuda.alloc(12 * MiB);
    big.free();
    expect(memory.memory_reserved()).toBe(14 * MiB);
    memory.empty_cache();
    expect(memory.memory_reserved()).toBe(2 * MiB);
    expect(cuda.sim.state().usedBytes).toBe(2 * MiB);
    keep.free();
    memory.empty_cache(0);
    expect(memory.memory_reserved()).toBe(0);
  });

  it('mem_get_info reports the device', () => {
    freshSim({ capacityBytes: 512 * MiB });
    cuda.alloc(100 * MiB);
    expect(memory.mem_get_info()).toEqual([412 * MiB, 512 * MiB]);
  });

  it('a memory fraction caps reserved memory', () => {
    freshSim({ capacityBytes: 1024 * MiB });
    memory.set_per_process_memory_fraction(0.25);
    expect(memory.get_per_process_memory_fraction()).toBe(0.25);
    cuda.alloc(200 * MiB);
    expect(() => cuda.alloc(100 * MiB)).toThrow(/256\.00 MiB allowed/);
  });

  it('allocator settings apply at run time and are reported as PyTorch does', () => {
    memory._set_allocator_settings('max_split_size_mb:64,roundup_power2_divisions:4');
    const s = memory.get_allocator_settings() as any;
    expect(s.max_split_size).toBe(64 * MiB);
    expect(s.PYTORCH_CUDA_ALLOC_CONF).toBe('max_split_size_mb:64,roundup_power2_divisions:4');
    expect(s.roundup_power2_divisions['1']).toBe(4);
    expect(Object.keys(s.roundup_power2_divisions)).toHaveLength(16);
    expect(memory.memory_stats().max_split_size).toBe(64 * MiB);
    cuda.alloc(3000);
    expect(memory.memory_allocated()).toBe(3072);
    memory._set_allocator_settings('');
    expect(memory.memory_stats().max_split_size).toBe(-1);
  });
});

describe('memory_summary', () => {
  it('shows the numbers and says the device is simulated', () => {
    cuda.alloc(3 * MiB);
    const text = memory.memory_summary();
    expect(text).toContain('memory summary, device ID 0');
    expect(text).toContain('Simulated GPU 0');
    expect(text).toMatch(/\| Allocated memory\s+\|\s+3072 KiB \|/);
    expect(text).toMatch(/\| GPU reserved memory\s+\|\s+20480 KiB \|/);
    expect(text).toContain('from small pool');
    for (const line of text.trimEnd().split('\n')) expect(line).toHaveLength(77);
    expect(memory.memory_summary(0, true)).not.toContain('from small pool');
  });
});
