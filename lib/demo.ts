// The demo: a small simulated training loop that shows why reserved memory (what
// nvidia-smi shows) exceeds allocated memory, on whatever device this process has.
import * as cuda from './cuda.js';
import * as memory from './memory.js';
import type { DeviceBuffer } from './device-buffer.js';
import { humanBytes } from './format.js';

const MiB = 2 ** 20;

export interface DemoOptions {
  iterations?: number;
  print?: (line: string) => void;
}

// A model of a few layers: [weight bytes, activation bytes per iteration].
const LAYERS: Array<[number, number]> = [
  [9.4 * MiB, 24 * MiB],
  [2.3 * MiB, 12 * MiB],
  [36 * MiB, 6 * MiB],
  [0.25 * MiB, 3 * MiB],
  [64 * 1024, 0.75 * MiB],
  [20 * MiB, 1.5 * MiB],
];

export function runDemo(options: DemoOptions = {}): void {
  const print = options.print ?? ((line: string) => console.log(line));
  const iterations = options.iterations ?? 4;
  const info = cuda.runtimeInfo();
  const props = cuda.getDeviceProperties(0);
  print(`Device: ${props.name}`);
  print(props.simulated
    ? `SIMULATED: no real GPU memory is used (backend "${info.backend}"). ${info.note}.`
    : `Backend "${info.backend}": real GPU memory.`);
  print('');

  const side = cuda.Stream.create();
  const sim = props.simulated;
  const weights = LAYERS.map(([w]) => cuda.alloc(Math.round(w)));
  let grads: DeviceBuffer[] = [];
  let optimizerState: DeviceBuffer[] = [];
  print('iter  allocated     reserved      cached (reserved - allocated)  peak allocated');

  for (let it = 1; it <= iterations; it++) {
    // Forward: each layer keeps its activations for the backward pass.
    const activations = LAYERS.map(([, a]) => cuda.alloc(Math.round(a * (1 + 0.1 * (it % 2)))));
    // A temporary workspace used by a copy on the side stream: its memory must wait for
    // that stream before reuse, so it is recorded there.
    const workspace = cuda.alloc(5 * MiB);
    if (sim) cuda.sim.holdStream(side, true);
    cuda.recordStream(workspace, side);
    workspace.free(); // pending until the side stream's work completes
    // Backward: gradients (kept, like .grad), activations freed in reverse order.
    if (grads.length === 0) grads = LAYERS.map(([w]) => cuda.alloc(Math.round(w)));
    for (let i = activations.length - 1; i >= 0; i--) activations[i]!.free();
    // Optimizer state appears on the first step (two moments per weight, as in Adam).
    if (optimizerState.length === 0) {
      optimizerState = LAYERS.flatMap(([w]) => [cuda.alloc(Math.round(w)), cuda.alloc(Math.round(w))]);
    }
    if (sim) cuda.sim.completeStream(side);
    side.synchronize();
    const allocated = memory.memory_allocated();
    const reserved = memory.memory_reserved();
    print(`${String(it).padStart(4)}  ${humanBytes(allocated).padEnd(12)}  ${humanBytes(reserved).padEnd(12)}  ` +
      `${humanBytes(reserved - allocated).padEnd(29)}  ${humanBytes(memory.max_memory_allocated())}`);
  }

  print('');
  print(memory.memory_summary());
  print('Why reserved > allocated: freed blocks stay in the allocator\'s segments, cached for the next');
  print('request of a fitting size on the same stream, so the next iteration needs no device call.');
  print('nvidia-smi shows reserved memory (plus the CUDA context); memory_allocated() is what live');
  print('buffers hold. empty_cache() returns unused cached segments to the device:');
  for (const b of [...weights, ...grads, ...optimizerState]) b.free();
  side.destroy();
  const before = memory.memory_reserved();
  memory.empty_cache();
  print(`  reserved before empty_cache: ${humanBytes(before)}, after: ${humanBytes(memory.memory_reserved())}`);
  const stats = memory.memory_stats();
  print(`  device mallocs: ${stats.num_device_alloc}, device frees: ${stats.num_device_free}, ` +
    `allocations served: ${stats['allocation.all.allocated']}`);
}
