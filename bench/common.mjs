// Shared by the JS benchmarks: what machine and backend the figures come from, and a fresh
// allocator state that never swaps a real GPU for the simulator.
import os from 'node:os';
import { cuda, memory } from '../dist/index.js';

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
