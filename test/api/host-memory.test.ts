// Pinned host memory and asynchronous copies on the simulated GPU: PyTorch's stats keys,
// copies that land when their stream runs, blocks reused only after their copies, views
// emptied at free.
import { beforeEach, describe, expect, it } from 'vitest';
import { HostBuffer, cuda, memory } from '../../lib/index.js';
import { freshSim } from '../support/helpers.js';

beforeEach(() => freshSim());

// PyTorch 2.11's torch.cuda.memory.host_memory_stats() keys.
const PYTORCH_KEYS = [
  ...['active_bytes', 'active_requests', 'allocated_bytes', 'allocations'].flatMap((k) =>
    ['allocated', 'current', 'freed', 'peak'].map((m) => `${k}.${m}`)),
  ...['host_alloc_time', 'host_free_time'].flatMap((k) => ['avg', 'count', 'max', 'min', 'total'].map((m) => `${k}.${m}`)),
  'num_host_alloc', 'num_host_free',
];

describe('pinned host memory', () => {
  it('has PyTorch keys, rounds to powers of two and caches freed blocks', () => {
    memory.empty_host_cache();
    memory.reset_accumulated_host_memory_stats();
    const before = memory.host_memory_stats();
    expect(Object.keys(before)).toEqual(PYTORCH_KEYS);
    const h = cuda.allocHost(3000);
    expect(h).toBeInstanceOf(HostBuffer);
    expect(h.array.length).toBe(3000);
    let s = memory.host_memory_stats();
    expect(s['allocated_bytes.current']).toBe(4096);
    expect(s['active_requests.current']).toBe(1);
    expect(s.num_host_alloc).toBe(1);
    h.free();
    const again = cuda.allocHost(2100);  // also 4096: served from the cache
    s = memory.host_memory_stats();
    expect(s.num_host_alloc).toBe(1);
    expect(s['allocations.current']).toBe(1);
    again.free();
    memory.empty_host_cache();
    s = memory.host_memory_stats();
    expect([s['allocations.current'], s.num_host_free, s['host_free_time.count']]).toEqual([0, 1, 1]);
    expect((memory.host_memory_stats_as_nested_dict().allocated_bytes as Record<string, number>).peak).toBe(4096);
    memory.reset_peak_host_memory_stats();
    expect(memory.host_memory_stats()['allocated_bytes.peak']).toBe(0);
  });

  it('a freed block leaves every view of it empty, and a second free is refused', () => {
    const h = cuda.allocHost(64);
    const floats = new Float32Array(h.array.buffer);
    floats[0] = 1;
    h.free();
    expect([floats.length, h.array.length, h.disposed]).toEqual([0, 0, true]);
    expect(() => h.free()).toThrow(expect.objectContaining({ code: 'ERR_CCA_INVALID_POINTER' }));
  });

  it('async copies land when their stream runs; the block is reused only after', async () => {
    const s = cuda.Stream.create();
    const d = cuda.alloc(1024, { stream: s }).fill(0);
    const src = cuda.allocHost(1024);
    src.array.fill(7);
    const dst = cuda.allocHost(1024);
    dst.array.fill(1);
    cuda.sim.holdStream(s);
    d.copyFromAsync(src);
    d.copyToAsync(dst);
    expect(dst.array[0]).toBe(1);  // queued behind held work
    src.free();
    const other = cuda.allocHost(1024);
    expect(memory.host_memory_stats()['allocations.current']).toBe(3);  // src's block waits for its copy
    const done = s.done();
    cuda.sim.completeStream(s);
    await done;
    expect([dst.array[0], dst.array[1023]]).toEqual([7, 7]);
    other.free();
    cuda.sim.holdStream(s, false);
    const reused = cuda.allocHost(1000);
    expect(memory.host_memory_stats()['allocations.current']).toBe(3);
    reused.free();
    dst.free();
    d.free();
  });

  it('device-to-device copies, into an offset, from a view', async () => {
    const a = cuda.alloc(16).copyFrom(new Uint8Array(16).map((_, i) => i));
    const b = cuda.alloc(32).fill(0);
    b.copyFromAsync(a.view(4, 8), { offset: 8 });
    await b.stream.done();
    expect([...b.copyTo(new Uint8Array(20))].slice(6, 18)).toEqual([0, 0, 4, 5, 6, 7, 8, 9, 10, 11, 0, 0]);
  });

  it('pageable memory and bad options are refused with codes, changing nothing', () => {
    const d = cuda.alloc(64);
    const h = cuda.allocHost(64);
    const stats = memory.memory_stats();
    expect(() => d.copyFromAsync(new Uint8Array(64))).toThrow(expect.objectContaining({ code: 'ERR_CCA_NOT_PINNED' }));
    expect(() => d.copyToAsync(new Uint8Array(64))).toThrow(expect.objectContaining({ code: 'ERR_CCA_NOT_PINNED' }));
    expect(() => d.copyFromAsync(h, { offset: 1 })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_VALUE' }));
    expect(() => d.copyFromAsync(h, { strem: cuda.defaultStream() } as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => d.copyFromAsync(42 as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    h.free();
    expect(() => d.copyFromAsync(h)).toThrow(expect.objectContaining({ code: 'ERR_CCA_NOT_PINNED' }));
    expect(memory.memory_stats()).toEqual(stats);
    expect(memory.check_invariants()).toBeNull();
  });
});
