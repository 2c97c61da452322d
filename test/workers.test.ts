// Worker threads of one process share one allocator per device; a worker that exits
// without freeing has its allocations released by the environment cleanup hook.
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { memory } from '../lib/index.js';
import { native } from '../lib/native.js';

const script = `
  const { parentPort, workerData } = require('node:worker_threads');
  const b = require(workerData.binding);
  const ptrs = [];
  for (let i = 0; i < 2000; i++) ptrs.push(b.alloc(0, 512 + (i % 7) * 4096, 0));
  for (let i = 0; i < ptrs.length; i += 2) b.free(0, ptrs[i]);
  parentPort.postMessage(ptrs.length / 2);
`;

function runWorker(): Promise<number> {
  return new Promise((resolve, reject) => {
    const w = new Worker(script, {
      eval: true,
      workerData: { binding: new URL('../binding.cjs', import.meta.url).pathname },
    });
    let kept = 0;
    w.on('message', (n: number) => (kept = n));
    w.on('error', reject);
    w.on('exit', () => resolve(kept));
  });
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
});
