// Worker threads of one process share one allocator per device; a worker that exits
// without freeing has its allocations released by the environment cleanup hook. A worker
// that takes simulated devices of its own (cuda.sim.isolate) shares nothing.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { memory } from '../../lib/index.js';
import { native } from '../../lib/native.js';

const script = `
  const { parentPort, workerData } = require('node:worker_threads');
  const b = require(workerData.binding);
  const ptrs = [];
  for (let i = 0; i < 2000; i++) ptrs.push(b.alloc(0, 512 + (i % 7) * 4096, 0));
  for (let i = 0; i < ptrs.length; i += 2) b.free(0, ptrs[i]);
  parentPort.postMessage(ptrs.length / 2);
`;

function runWorker<T = number>(source = script): Promise<T> {
  return new Promise((resolve, reject) => {
    const w = new Worker(source, {
      eval: true,
      workerData: {
        binding: new URL('../../binding.cjs', import.meta.url).pathname,
        dist: new URL('../../dist/index.js', import.meta.url).href,
      },
    });
    let answer: unknown = 0;
    w.on('message', (m: unknown) => (answer = m));
    w.on('error', reject);
    w.on('exit', () => resolve(answer as T));
  });
}

// Allocates on its own 64 MiB device, replaces it with a 32 MiB one, runs out there, and
// exits holding memory.
const isolated = `
  const { parentPort, workerData } = require('node:worker_threads');
  (async () => {
    const { cuda, memory } = await import(workerData.dist);
    const MiB = 1 << 20;
    const before = cuda.alloc(MiB);  // on the process's devices
    const seenBefore = memory.memory_allocated();
    cuda.sim.isolate({ capacityBytes: 64 * MiB, devices: 2 });
    const seenAfter = memory.memory_allocated();
    let stale = '';
    try { before.free(); } catch (e) { stale = e.code; }
    const kept = [cuda.alloc(10 * MiB), cuda.alloc(3 * MiB, { device: 1 })];
    const ownAllocated = memory.memory_allocated();
    cuda.sim.configure({ capacityBytes: 32 * MiB });  // replaces this thread's devices only
    let oom = '';
    try { cuda.alloc(40 * MiB); } catch (e) { oom = e.code; }
    kept.push(cuda.alloc(8 * MiB));
    parentPort.postMessage({
      seenBefore, seenAfter, stale, ownAllocated, oom, info: cuda.runtimeInfo(),
      total: cuda.getDeviceProperties().totalMemory, invariants: memory.check_invariants(),
    });
  })().catch((e) => parentPort.postMessage({ error: e.stack }));
`;

interface IsolatedAnswer {
  seenBefore: number; seenAfter: number; stale: string; ownAllocated: number; oom: string;
  info: { isolated: boolean; deviceCount: number; backend: string }; total: number; invariants: string | null; error?: string;
}

describe('worker threads', () => {
  it('share the allocator, and an exiting worker releases what it kept', async () => {
    const mine = native.alloc(0, 1000, 0);
    const kept = await Promise.all([runWorker(), runWorker(), runWorker()]);
    expect(kept).toEqual([1000, 1000, 1000]);
    // All three workers exited: their 3000 live buffers were freed by the cleanup hook.
    expect(memory.memory_stats()['allocation.all.current']).toBe(1);
    expect(memory.memory_stats()['allocation.all.allocated']).toBe(6001);
    expect(memory.check_invariants()).toBeNull();
    native.free(0, mine);
  });

  it('with devices of their own (cuda.sim.isolate) touch nothing of the process or of each other', async () => {
    const mine = native.alloc(0, 3 << 20, 0);
    const stats = memory.memory_stats();
    const answers = await Promise.all([runWorker<IsolatedAnswer>(isolated), runWorker<IsolatedAnswer>(isolated)]);
    for (const a of answers) {
      expect(a.error).toBeUndefined();
      expect(a.seenBefore).toBeGreaterThan(0);  // the process's devices, mine included
      expect(a.seenAfter).toBe(0);
      expect(a.stale).toBe('ERR_CCA_INVALID_POINTER');
      expect(a.ownAllocated).toBe(10 << 20);  // device 0 of its own: the other worker's is apart
      expect(a.oom).toBe('ERR_CUDA_OUT_OF_MEMORY');
      expect(a.info).toMatchObject({ isolated: true, deviceCount: 1, backend: 'sim' });
      expect(a.total).toBe(32 << 20);
      expect(a.invariants).toBeNull();
    }
    // The 1 MiB each worker took from the process's devices before isolating was released
    // when it exited; nothing it did on its own devices reached these.
    const after = memory.memory_stats();
    expect(after['allocation.all.current']).toBe(1);
    expect(after['allocated_bytes.all.current']).toBe(stats['allocated_bytes.all.current']);
    expect(after['allocation.all.allocated']).toBe(stats['allocation.all.allocated'] + 2);
    expect(after['allocation.all.freed']).toBe(stats['allocation.all.freed'] + 2);
    expect(native.runtimeInfo().isolated).toBe(false);
    expect(memory.check_invariants()).toBeNull();
    native.free(0, mine);
  });

  it('take turns with live trace events: one JS environment holds a device\'s queue at a time', async () => {
    const subscribeInWorker = `
      const { parentPort, workerData } = require('node:worker_threads');
      (async () => {
        const { memory } = await import(workerData.dist);
        let code = 'subscribed';
        try { memory.onTrace(() => {}, { device: 0 }); } catch (e) { code = e.code; }
        parentPort.postMessage(code);
      })();
    `;
    const sub = memory.onTrace(() => {}, { device: 0 });
    expect(await runWorker<string>(subscribeInWorker)).toBe('ERR_CCA_TRACE_IN_USE');
    sub.stop();
    // The worker subscribes and exits without stopping: its subscription goes with it.
    expect(await runWorker<string>(subscribeInWorker)).toBe('subscribed');
    memory.onTrace(() => {}, { device: 0 }).stop();
  });
});
