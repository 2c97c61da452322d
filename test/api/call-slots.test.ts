// cuda.alloc() passes its numbers to the addon in memory the addon shares with the thread
// (lib/call-slots.ts, native/binding/call_slots.h). These check what that must not change:
// the numbers reach the allocator whole, the pointer comes back, and each thread's slots are
// its own.
import { Worker } from 'node:worker_threads';
import { beforeEach, describe, expect, it } from 'vitest';
import { cuda, memory } from '../../lib/index.js';
import { native } from '../../lib/native.js';
import { MiB, expectValid, freshSim } from '../support/helpers.js';

beforeEach(() => freshSim());

const slots = native.callSlots();

function allocInSlots(device: number, size: number, stream: number, stackId = 0, tagId = 0): number {
  slots.set([device, size, stream, stackId, tagId]);
  native.allocInSlots();
  return slots[0]!;
}

describe('call slots', () => {
  it('are one memory: every request hands out the same', () => {
    const other = native.callSlots();
    other[5] = 42;
    expect(slots[5]).toBe(42);
    other[5] = 0;
  });

  it('allocInSlots allocates what alloc would, and leaves the pointer in slot 0', () => {
    const a = allocInSlots(0, 3 * MiB, 0);
    native.free(0, a);
    const b = native.alloc(0, 3 * MiB, 0);
    expect(b).toBe(a);  // the same cached block: the same request
    const c = allocInSlots(0, 5000, 0);
    const blocks = memory.memory_snapshot().flatMap((s) => s.blocks);
    expect(blocks.find((x) => x.address === c)).toMatchObject({ state: 'active_allocated', requested_size: 5000 });
    native.free(0, b);
    native.free(0, c);
    expectValid();
  });

  it('carry cuda.alloc()\'s stream and tag to the allocator', () => {
    const side = cuda.Stream.create();
    const buf = cuda.alloc(4096, { stream: side, tag: 'weights' });
    const block = memory.memory_snapshot().find((s) => s.stream === side.handle)!
      .blocks.find((x) => x.address === buf.ptr);
    expect(block).toMatchObject({ state: 'active_allocated', requested_size: 4096 });
    expect(memory.memory_stats_by_tag().weights!.allocated_bytes.current).toBe(4096);
    buf.free();
    expectValid();
  });

  it('are each thread\'s own: workers allocating through theirs at once get pointers of their own', async () => {
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      const b = require(workerData.binding);
      const s = b.callSlots();
      const ptrs = [];
      for (let i = 0; i < 4000; i++) {
        s[0] = 0; s[1] = 512 + (i % 7) * 4096; s[2] = 0; s[3] = 0; s[4] = 0;
        b.allocInSlots();
        ptrs.push(s[0]);
        if (i % 2 === 1) b.free(0, ptrs[i - 1]);
      }
      parentPort.postMessage({ kept: ptrs.filter((_, i) => i % 2 === 1) });
    `;
    const run = () => new Promise<{ kept: number[] }>((resolve, reject) => {
      const w = new Worker(source, { eval: true, workerData: { binding: new URL('../../binding.cjs', import.meta.url).pathname } });
      let answer: { kept: number[] } | undefined;
      w.on('message', (m) => (answer = m));
      w.on('error', reject);
      w.on('exit', () => (answer ? resolve(answer) : reject(new Error('the worker sent no answer'))));
    });
    const workers = [run(), run()];
    // This thread allocates through its own slots meanwhile.
    const mine: number[] = [];
    for (let i = 0; i < 4000; i++) {
      const b = cuda.alloc(1024 + (i % 5) * 512);
      mine.push(b.ptr);
      b.free();
    }
    const answers = await Promise.all(workers);
    // A pointer read from slots another thread wrote would be freed twice (an error that ends
    // the worker) or kept twice. Each worker kept every second pointer alive until it exited
    // (the cleanup hook released them), so its 2,000 are distinct.
    for (const a of answers) {
      expect(a.kept).toHaveLength(2000);
      expect(new Set(a.kept).size).toBe(2000);
    }
    expect(memory.memory_allocated()).toBe(0);
    expect(memory.memory_stats()['allocation.all.allocated']).toBe(12000);
    expectValid();
  });
});
