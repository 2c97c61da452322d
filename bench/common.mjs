// Shared by the JS benchmarks: what machine and backend the figures come from, and a fresh
// allocator state that never swaps a real GPU for the simulator.
import os from 'node:os';
import { MemPool, cuda, memory, use_mem_pool } from '../dist/index.js';

export function machine() {
  const info = cuda.runtimeInfo();
  const dev = cuda.getDeviceProperties(0);
  return `${os.cpus()[0].model}, ${os.cpus().length} cores, Node ${process.version}; backend ${info.backend}: ${dev.name}`;
}

/** Fresh simulated devices on sim; on a GPU, history off and the cache emptied. */
export function freshState(simOptions = {}) {
  memory._record_memory_history(null);
  if (cuda.runtimeInfo().backend === 'sim') {
    cuda.sim.configure(simOptions);
  } else {
    memory.empty_cache();
  }
}

/**
 * A ~1M-entry history: 100 annotated steps of 3,333 allocations freed within the step plus
 * one kept (a leak). Returns the snapshot (history is turned off) and the kept buffers.
 * With `pools`, every odd allocation is made in one of that many MemPools (kept to the end).
 */
export function recordMillionEvents({ tagged = false, pools = 0 } = {}) {
  memory._record_memory_history({ enabled: 'all', context: null, maxEntries: 1_100_000 });
  const keep = [];
  const memPools = Array.from({ length: pools }, () => new MemPool());
  for (let step = 0; step < 100; step++) {
    memory.annotate('step', () => {
      const tmp = [];
      for (let i = 0; i < 3333; i++) {
        const alloc = () => cuda.alloc(512 * (1 + (i % 200)), tagged ? { tag: i % 2 ? 'odd' : 'even' } : undefined);
        tmp.push(pools && i % 2 ? use_mem_pool(memPools[(i >> 1) % pools], alloc) : alloc());
      }
      keep.push(cuda.alloc(4096));
      for (const b of tmp) b.free();
    });
  }
  const snap = memory._snapshot();
  memory._record_memory_history(null);
  return { snap, keep };
}
