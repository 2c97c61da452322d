import { beforeEach, describe, expect, it } from 'vitest';
import { CudaOutOfMemoryError, Stream, cuda, memory } from '../../lib/index.js';
import { MiB, expectValid, freshSim } from '../support/helpers.js';

beforeEach(() => freshSim());

describe('devices', () => {
  it('reports a simulated device and why it was chosen', () => {
    const info = cuda.runtimeInfo();
    expect(info.backend).toBe('sim');
    expect(cuda.deviceCount()).toBe(1);
    expect(cuda.isSimulated()).toBe(true);
    expect(cuda.deviceName()).toMatch(/Simulated GPU 0/);
    expect(cuda.getDeviceProperties().totalMemory).toBe(16 * 1024 * MiB);
    expect(cuda.getDeviceProperties()).toMatchObject({ major: 0, minor: 0, simulated: true });
  });

  it('keeps one allocator per device', () => {
    freshSim({ devices: 2 });
    const a = cuda.alloc(MiB, { device: 1 });
    expect(a.device).toBe(1);
    expect(memory.memory_allocated(1)).toBe(MiB);
    expect(memory.memory_allocated(0)).toBe(0);
    cuda.setDevice(1);
    expect(cuda.currentDevice()).toBe(1);
    expect(cuda.alloc(512).device).toBe(1);
    cuda.setDevice(0);
    a.free();
    expectValid(1);
  });
});

describe('DeviceBuffer', () => {
  it('reuses freed memory on the same stream without a device call', () => {
    const a = cuda.alloc(1000);
    const ptr = a.ptr;
    a.free();
    expect(a.disposed).toBe(true);
    const b = cuda.alloc(900);
    expect(b.ptr).toBe(ptr);
    expect(memory.memory_stats().num_device_alloc).toBe(1);
  });

  it('frees on Symbol.dispose, once', () => {
    const a = cuda.alloc(4096);
    a[Symbol.dispose]();
    a[Symbol.dispose]();
    expect(memory.memory_allocated()).toBe(0);
  });

  it('a zero-byte allocation is a null buffer', () => {
    const z = cuda.alloc(0);
    expect(z.ptr).toBe(0);
    expect(memory.memory_allocated()).toBe(0);
    z.free();
  });
});

describe('streams', () => {
  it('never reuses a block across streams', () => {
    const s = Stream.create();
    const a = cuda.alloc(1000);
    const ptr = a.ptr;
    a.free();
    const b = cuda.alloc(1000, { stream: s });
    expect(b.ptr).not.toBe(ptr);
    expect(b.stream).toBe(s);
    expect(memory.memory_stats()['segment.all.current']).toBe(2);
  });

  // stream 0: alloc p -- free p ............................ alloc -> p
  // side:          recordStream(p) [work held ......] complete
  it('recordStream defers reuse until the other stream\'s work completes', () => {
    const side = Stream.create();
    cuda.sim.holdStream(side);
    const p = cuda.alloc(4096);
    cuda.recordStream(p, side);
    p.free();
    expect(memory.memory_allocated()).toBe(0);
    expect(memory.memory_stats()['active_bytes.all.current']).toBe(4096);
    const q = cuda.alloc(4096);
    expect(q.ptr).not.toBe(p.ptr);
    cuda.sim.completeStream(side);
    const r = cuda.alloc(4096);
    expect(r.ptr).toBe(p.ptr);
    expectValid();
  });

  it('synchronize and destroy complete the stream\'s pending frees', () => {
    const side = Stream.create();
    cuda.sim.holdStream(side);
    const p = cuda.alloc(4096);
    cuda.recordStream(p, side);
    expect(side.query()).toBe(true);
    p.free();
    expect(cuda.sim.state().pendingEvents).toBe(1);
    expect(side.query()).toBe(false);  // the event recorded for p waits on the held stream
    side.synchronize();
    expect(memory.memory_stats()['active.all.current']).toBe(0);
    side.destroy();
    expect(side.destroyed).toBe(true);
  });
});

describe('out of memory', () => {
  it('retries after releasing the cache, then throws with the numbers', () => {
    freshSim({ capacityBytes: 64 * MiB });
    const side = Stream.create();
    cuda.alloc(40 * MiB, { stream: side }).free();
    const a = cuda.alloc(40 * MiB);
    expect(memory.memory_stats().num_alloc_retries).toBe(1);
    let err: CudaOutOfMemoryError | undefined;
    try {
      cuda.alloc(30 * MiB);
    } catch (e) {
      err = e as CudaOutOfMemoryError;
    }
    expect(err).toBeInstanceOf(CudaOutOfMemoryError);
    expect(err!.code).toBe('ERR_CUDA_OUT_OF_MEMORY');
    expect(err!.requested).toBe(30 * MiB);
    expect(err!.allocSize).toBe(30 * MiB);
    expect(err!.deviceTotal).toBe(64 * MiB);
    expect(err!.deviceFree).toBe(24 * MiB);
    expect(err!.allocated).toBe(40 * MiB);
    expect(err!.reserved).toBe(40 * MiB);
    expect(err!.message).toMatch(
      /^CUDA out of memory\. Tried to allocate 30\.00 MiB\. GPU 0 has a total capacity of 64\.00 MiB of which 24\.00 MiB is free\. Of the allocated memory 40\.00 MiB is allocated by the caching allocator, and 0 bytes is reserved by the caching allocator but unallocated\./,
    );
    expect(memory.memory_stats().num_ooms).toBe(1);
    expect(err!.freeBlocks).toBe(0);
    expect(err!.message).not.toContain('Fragmentation');
    a.free();
    expectValid();
  });

  it('says how fragmented the cache left over is: free bytes, blocks, the largest', () => {
    freshSim({ capacityBytes: 40 * MiB });
    const x = cuda.alloc(4 * MiB);   // a 20 MiB segment: [x 4][y 4][z 4][free 8]
    const y = cuda.alloc(4 * MiB);
    const z = cuda.alloc(4 * MiB);
    y.free();                        // [x][free 4][z][free 8]
    const w = cuda.alloc(20 * MiB);  // the second segment fills the device
    let err: CudaOutOfMemoryError | undefined;
    try {
      cuda.alloc(10 * MiB);          // 12 MiB are free, but in 4 + 8
    } catch (e) {
      err = e as CudaOutOfMemoryError;
    }
    expect(err).toBeInstanceOf(CudaOutOfMemoryError);
    expect(err!.cachedFree).toBe(12 * MiB);
    expect(err!.freeBlocks).toBe(2);
    expect(err!.largestFreeBlock).toBe(8 * MiB);
    expect(err!.reserved - err!.allocated).toBe(12 * MiB);
    expect(err!.message).toContain('Fragmentation: 12.00 MiB of the reserved memory is free in 2 blocks, ' +
      'the largest 8.00 MiB; each sits in a segment that still holds live blocks.');
    for (const b of [x, z, w]) b.free();
    expectValid();
  });

  it('injected device malloc failures go through the retry path', () => {
    cuda.alloc(1000).free();
    cuda.sim.failNextMallocs(1);
    cuda.alloc(5 * MiB);
    expect(memory.memory_stats().num_alloc_retries).toBe(1);
    expectValid();
  });
});
