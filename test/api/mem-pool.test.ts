import { beforeEach, describe, expect, it } from 'vitest';
import { ArgumentTypeError, InvalidArgumentError, MemPool, cuda, memory, use_mem_pool } from '../../lib/index.js';
import { MiB, expectValid, freshSim } from '../support/helpers.js';

beforeEach(() => {
  freshSim();
  memory._record_memory_history(null);
});

describe('MemPool', () => {
  // PR #172672's test: history on, 1000 x 4 KiB inside a pool, freed; snapshots of the
  // pool and of everything, with and without traces.
  it('routes allocations made inside use_mem_pool and snapshots only its segments', () => {
    memory._record_memory_history({ enabled: 'all' });
    const pool = new MemPool();
    expect(pool.id).toHaveLength(2);
    expect(pool.id[0]).toBe(0);
    expect(pool.use_count()).toBe(1);
    const outside = cuda.alloc(4096);
    const bufs = use_mem_pool(pool, () => {
      expect(pool.use_count()).toBe(2);
      return Array.from({ length: 1000 }, () => cuda.alloc(4096));
    });
    expect(pool.use_count()).toBe(1);
    const mine = pool.snapshot({ includeTraces: false });
    expect(mine).toHaveLength(2);
    for (const s of mine) expect(s.segment_pool_id).toEqual(pool.id);
    expect(memory.memory_snapshot({ mempoolId: pool.id })).toEqual(mine);
    const all = memory.memory_snapshot();
    expect(all).toHaveLength(3);
    expect(all.filter((s) => s.segment_pool_id[1] === 0)[0]!.blocks[0]!.address).toBe(outside.ptr);
    const traces = memory._snapshot({ mempoolId: pool.id }).device_traces[0]!;
    expect(traces.filter((e) => e.action === 'alloc' && e.pool_id![1] === pool.id[1])).toHaveLength(1000);
    for (const b of bufs) b.free();
    expect(memory.memory_allocated()).toBe(4096);
    expectValid();
  });

  it('gives its memory back when released, once nothing is allocated from it', async () => {
    const pool = new MemPool();
    const kept = use_mem_pool(pool, () => cuda.alloc(3 * MiB));
    use_mem_pool(pool, () => cuda.alloc(30 * MiB)).free();  // too big for the 17 MiB rest: its own segment
    expect(memory.memory_reserved()).toBe(20 * MiB + 30 * MiB);
    pool.release();
    expect(pool.use_count()).toBe(1 - 1);
    expect(memory.memory_reserved()).toBe(20 * MiB);  // the free segment went at once
    kept.free();
    memory.empty_cache();
    expect(memory.memory_reserved()).toBe(0);
    expect(() => use_mem_pool(pool, () => 0)).toThrow(InvalidArgumentError);
    // Async bodies keep the routing until they settle; `using`-style disposal releases.
    const p2 = new MemPool();
    const b = await use_mem_pool(p2, async () => cuda.alloc(100));
    expect(p2.snapshot()[0]!.blocks[0]!.address).toBe(b.ptr);
    b.free();
    p2[Symbol.dispose]();
    p2[Symbol.dispose]();
    expectValid();
  });

  it('validates its arguments', () => {
    expect(() => use_mem_pool({} as never, () => 0)).toThrow(ArgumentTypeError);
    expect(() => use_mem_pool(new MemPool(), 5 as never)).toThrow(ArgumentTypeError);
    expect(() => new MemPool({ device: 3 })).toThrow(RangeError);
    expect(() => memory.memory_snapshot({ mempoolId: [0] })).toThrow(ArgumentTypeError);
    const pool = new MemPool();
    expect(() => use_mem_pool(pool, () => {
      throw new Error('inside');
    })).toThrow('inside');
    expect(pool.use_count()).toBe(1);  // the route ended despite the throw
  });
});
